//go:build unix

package main

import "golang.org/x/sys/unix"

// brokenWriteEnds reports whether any of the files fds is a pipe whose
// reader is gone, or a socket whose peer is (poll(2) says POLLERR or
// POLLHUP of it); one it cannot look at counts as broken.
func brokenWriteEnds(fds ...int) bool {
	polls := make([]unix.PollFd, len(fds))
	for i, fd := range fds {
		polls[i] = unix.PollFd{Fd: int32(fd), Events: unix.POLLOUT}
	}
	if _, err := unix.Poll(polls, 0); err != nil {
		return true
	}
	for _, p := range polls {
		if p.Revents&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0 {
			return true
		}
	}
	return false
}
