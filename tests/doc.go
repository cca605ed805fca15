// Package tests holds spiral's end-to-end tests: each builds the binary
// once (TestMain) and runs it as a user would, checking exit codes and
// output.
package tests
