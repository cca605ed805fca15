package model

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/spiral-rl/spiral/model/ortc"
)

// ORTVersion is the ONNX Runtime release that scripts/setup.sh installs; its
// C API (version 24) is the one github.com/yalue/onnxruntime_go v1.27 asks for.
const ORTVersion = "1.30.0"

// LibEnvVar names the environment variable that points at the ONNX Runtime
// shared library when --ort-lib is not given.
const LibEnvVar = "ONNXRUNTIME_LIB"

// SetupCommand is the command that installs the native dependencies.
const SetupCommand = "scripts/setup.sh"

// CacheDir returns spiral's per-user cache directory: $SPIRAL_CACHE_DIR if
// set, else the "spiral" folder of os.UserCacheDir (on Linux
// ${XDG_CACHE_HOME:-$HOME/.cache}/spiral), the same place scripts/setup.sh
// writes to.
func CacheDir() (string, error) {
	if d := os.Getenv("SPIRAL_CACHE_DIR"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("locate spiral's cache directory: %w", err)
	}
	return filepath.Join(d, "spiral"), nil
}

// SetupLibPath returns where scripts/setup.sh installs the ONNX Runtime
// shared library.
func SetupLibPath() string {
	d, err := CacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "onnxruntime-"+ORTVersion, "libonnxruntime.so")
}

// ORTCUDAVersion is the CUDA build `scripts/setup.sh --cuda` installs
// (PyPI's onnxruntime-gpu, for CUDA 13): the same release as the CPU
// build.
const ORTCUDAVersion = ORTVersion

// SetupCUDALibPath returns where `scripts/setup.sh --cuda` installs the
// CUDA build of ONNX Runtime (with its provider and CUDA libraries).
func SetupCUDALibPath() string {
	d, err := CacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "onnxruntime-gpu-"+ORTCUDAVersion, "libonnxruntime.so")
}

// DeviceKind is the execution provider family a Runtime uses.
type DeviceKind int

const (
	// CPU runs every session on ONNX Runtime's CPU execution provider.
	CPU DeviceKind = iota
	// CUDA appends ONNX Runtime's CUDA execution provider to every session.
	CUDA
)

// Device is a parsed --device value.
type Device struct {
	Kind DeviceKind
	// ID is the CUDA device ordinal; 0 for CPU.
	ID int
}

// String renders d the way --device accepts it.
func (d Device) String() string {
	if d.Kind == CUDA {
		return "cuda:" + strconv.Itoa(d.ID)
	}
	return "cpu"
}

// ParseDevice parses "cpu", "cuda", "cuda:N" or "auto". auto reports
// auto=true and the CUDA device 0; the caller falls back to CPU when CUDA
// cannot load. An error names the value and what is accepted
// (`"gpu": want cpu, cuda, cuda:N or auto`), for the caller to prefix
// with the setting or flag that gave it.
func ParseDevice(s string) (d Device, auto bool, err error) {
	switch v := strings.TrimSpace(strings.ToLower(s)); {
	case v == "" || v == "cpu":
		return Device{Kind: CPU}, false, nil
	case v == "auto":
		return Device{Kind: CUDA}, true, nil
	case v == "cuda":
		return Device{Kind: CUDA}, false, nil
	case strings.HasPrefix(v, "cuda:"):
		n, err := strconv.Atoi(v[len("cuda:"):])
		if err != nil || n < 0 {
			return Device{}, false, fmt.Errorf("%q: want cuda:N with N a non-negative integer", s)
		}
		return Device{Kind: CUDA, ID: n}, false, nil
	}
	return Device{}, false, fmt.Errorf("%q: want cpu, cuda, cuda:N or auto", s)
}

// RuntimeOptions configures OpenRuntime. The zero value loads the library
// from $ONNXRUNTIME_LIB or the setup location and runs on the CPU with ONNX
// Runtime's default thread count.
type RuntimeOptions struct {
	// LibPath is the ONNX Runtime shared library (--ort-lib); tried first.
	LibPath string
	// Device is "cpu" (default), "cuda", "cuda:N" or "auto".
	Device string
	// Threads is the intra-op thread count per session; 0 = ONNX Runtime's
	// default (one per physical core).
	Threads int
	// Warn receives one-line warnings (the auto fallback); nil = os.Stderr.
	Warn io.Writer
	// Deterministic runs every session with one intra-op thread and ONNX
	// Runtime's deterministic compute, so that the same inputs give
	// bit-identical outputs run after run (Threads must then be 0 or 1).
	Deterministic bool
	// CUDAOptions are options of ONNX Runtime's CUDA execution provider
	// (such as arena_extend_strategy or gpu_mem_limit), which checks them
	// when a session opens on CUDA; device_id comes from Device.
	CUDAOptions map[string]string
	// Arena says whether every session takes its device memory from one
	// shared arena (ShareDeviceArena), so that memory one frees is there
	// for the others; the zero value is ArenaAuto.
	Arena ArenaSharing
}

// ArenaSharing says whether a Runtime's sessions share one device arena.
type ArenaSharing int

const (
	// ArenaAuto shares it on the CPU, and not on CUDA, where sharing is
	// not measured yet.
	ArenaAuto ArenaSharing = iota
	// ArenaShared shares it on every device.
	ArenaShared
	// ArenaPerSession leaves each session its own.
	ArenaPerSession
)

// ParseArenaSharing parses "auto", "true" (shared) or "false" (each
// session its own), --shared-arena's values.
func ParseArenaSharing(s string) (ArenaSharing, error) {
	switch s {
	case "auto":
		return ArenaAuto, nil
	case "true":
		return ArenaShared, nil
	case "false":
		return ArenaPerSession, nil
	}
	return 0, fmt.Errorf("%q: want auto, true or false", s)
}

// Runtime owns the process's ONNX Runtime environment. Build one in main,
// pass it down, Close it with defer. onnxruntime_go keeps the environment in
// package state, so at most one Runtime is open per process.
type Runtime struct {
	lib           string
	libFrom       string // where lib was found (--ort-lib, $ONNXRUNTIME_LIB, setup location)
	device        Device
	threads       int
	deterministic bool
	cudaOptions   map[string]string
	api           *ortc.API
	// arena is the shared device arena, nil when each session keeps its
	// own.
	arena *DeviceArena
}

// LibraryNotFoundError reports that no candidate ONNX Runtime library loaded.
type LibraryNotFoundError struct {
	// Tried lists each place looked at ("--ort-lib", "$ONNXRUNTIME_LIB",
	// "setup location") with its path and why it failed.
	Tried []string
}

func (e *LibraryNotFoundError) Error() string {
	return fmt.Sprintf("no ONNX Runtime library could be loaded; tried:\n  %s\nrun %s to install ONNX Runtime %s, or pass --ort-lib / set %s",
		strings.Join(e.Tried, "\n  "), SetupCommand, ORTVersion, LibEnvVar)
}

// OpenRuntime loads the ONNX Runtime shared library, trying in order
// opt.LibPath (--ort-lib), $ONNXRUNTIME_LIB and the setup location, and
// initialises the environment. With Device cuda it checks that the CUDA
// execution provider can be appended and fails otherwise; with auto it
// falls back to CPU with a one-line warning.
func OpenRuntime(opt RuntimeOptions) (*Runtime, error) {
	dev, auto, err := ParseDevice(opt.Device)
	if err != nil {
		return nil, fmt.Errorf("device %w", err)
	}
	if opt.Threads < 0 {
		return nil, fmt.Errorf("threads %d: want >= 0", opt.Threads)
	}
	if opt.Deterministic && opt.Threads > 1 {
		return nil, fmt.Errorf("deterministic runs use one thread; %d threads asked", opt.Threads)
	}
	if _, ok := opt.CUDAOptions["device_id"]; ok {
		return nil, errors.New(`CUDA option "device_id": the device is chosen by the device ("cuda:N")`)
	}
	if ort.IsInitialized() {
		return nil, errors.New("an ONNX Runtime environment is already open in this process")
	}
	// An explicit library (--ort-lib, else $ONNXRUNTIME_LIB) is the only
	// one tried: someone pointing at a CUDA build must not silently get
	// another. The setup location applies only when neither is given.
	candidates := []struct{ what, path string }{
		{"--ort-lib", opt.LibPath},
		{"$" + LibEnvVar, os.Getenv(LibEnvVar)},
		{"setup location", SetupLibPath()},
	}
	// On CUDA the CUDA build is the setup location, when it is installed;
	// it also replaces $ONNXRUNTIME_LIB when that names setup's CPU build
	// (env.sh sets it so), which cannot run CUDA.
	if gpu := SetupCUDALibPath(); dev.Kind == CUDA && gpu != "" {
		if _, err := os.Stat(gpu); err == nil {
			candidates[2] = struct{ what, path string }{"setup location (CUDA build)", gpu}
			if candidates[1].path == SetupLibPath() {
				candidates[1] = struct{ what, path string }{"$" + LibEnvVar + ", setup's CPU build, replaced by setup's CUDA build", gpu}
			}
		}
	}
	var tried []string
	var lib, libFrom string
	for i, c := range candidates {
		if c.path == "" {
			tried = append(tried, c.what+": not set")
			continue
		}
		explicit := i < 2
		fail := func(why string) error {
			return fmt.Errorf("ONNX Runtime library %s (from %s): %s", c.path, c.what, why)
		}
		if _, err := os.Stat(c.path); err != nil {
			// There but not to be reached (a symbolic link loop, a
			// directory that may not be searched) is not missing.
			why := "no such file"
			var pe *fs.PathError
			if !errors.Is(err, fs.ErrNotExist) && errors.As(err, &pe) {
				why = pe.Err.Error()
			}
			if explicit {
				return nil, fail(why)
			}
			tried = append(tried, fmt.Sprintf("%s: %s: %s", c.what, c.path, why))
			break
		}
		// The file found, by its absolute path: the system loader would
		// search its library path for a name without a directory.
		if c.path, err = filepath.Abs(c.path); err != nil {
			return nil, fail(err.Error())
		}
		ort.SetSharedLibraryPath(c.path)
		if err := ort.InitializeEnvironment(ort.WithLogLevelError()); err != nil {
			if explicit {
				return nil, fail(fmt.Sprintf("does not load: %v", err))
			}
			tried = append(tried, fmt.Sprintf("%s: %s: %v", c.what, c.path, err))
			break
		}
		lib, libFrom = c.path, c.what
		removeTelemetryLog(os.TempDir(), os.Getpid()) // and at Close
		break
	}
	if lib == "" {
		return nil, &LibraryNotFoundError{Tried: tried}
	}
	api, err := ortc.Open(lib)
	if err != nil {
		return nil, errors.Join(err, ort.DestroyEnvironment())
	}
	ortc.TuneMalloc()
	threads := opt.Threads
	if opt.Deterministic {
		threads = 1
	}
	r := &Runtime{lib: lib, libFrom: libFrom, device: dev, threads: threads, deterministic: opt.Deterministic, cudaOptions: maps.Clone(opt.CUDAOptions), api: api}
	if dev.Kind == CUDA {
		if err := r.checkCUDA(); err != nil {
			if !auto {
				return nil, errors.Join(err, r.Close())
			}
			w := opt.Warn
			if w == nil {
				w = os.Stderr
			}
			fmt.Fprintf(w, "spiral: warning: --device auto: CUDA unavailable (%v); using CPU\n", firstLine(err.Error()))
			r.device = Device{Kind: CPU}
		}
	}
	if opt.Arena == ArenaShared || opt.Arena == ArenaAuto && r.device.Kind == CPU {
		if _, err := r.ShareDeviceArena(); err != nil {
			return nil, errors.Join(err, r.Close())
		}
	}
	return r, nil
}

// TelemetryLogPattern matches the log that ONNX Runtime's telemetry (the
// 1DS SDK of Microsoft's Linux builds, onnxruntime-node's among them)
// creates in the temporary directory with the environment:
// mat-debug-PID.log, one a process, never removed; empty, or holding the
// SDK's own errors (its event database "locked" while other processes
// use it, as concurrent spiral commands do).
const TelemetryLogPattern = "mat-debug-*.log"

// removeTelemetryLog removes this process's telemetry log (see
// TelemetryLogPattern) from dir, so that every spiral command does not
// leave one more file in /tmp (thousands after a study). It is the
// SDK's debug output, which nothing of spiral's asks for or writes to;
// errors only leave the file, so they are ignored.
func removeTelemetryLog(dir string, pid int) {
	path := filepath.Join(dir, "mat-debug-"+strconv.Itoa(pid)+".log")
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
		_ = os.Remove(path)
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func (r *Runtime) checkCUDA() error {
	if err := r.loadCUDA(); err != nil {
		return err
	}
	so, err := r.NewSessionOptions()
	if err != nil {
		return err
	}
	return so.Destroy()
}

// Close releases the ONNX Runtime environment.
func (r *Runtime) Close() error {
	if !ort.IsInitialized() {
		return nil
	}
	arenaErr := r.UnshareDeviceArena()
	if err := ort.DestroyEnvironment(); err != nil {
		return errors.Join(arenaErr, fmt.Errorf("close ONNX Runtime: %w", err))
	}
	// Again, in case the telemetry made it anew since.
	removeTelemetryLog(os.TempDir(), os.Getpid())
	return arenaErr
}

// Version returns the version string reported by the loaded library.
func (r *Runtime) Version() string { return ort.GetVersion() }

// LiveValues returns how many tensors made through r's ONNX Runtime are
// not released yet (ortc.API.LiveValues): a leak check for callers that
// release what they open.
func (r *Runtime) LiveValues() int64 { return r.api.LiveValues() }

// LibraryPath returns the path of the loaded ONNX Runtime library.
func (r *Runtime) LibraryPath() string { return r.lib }

// Device returns the device sessions run on (CPU after an auto fallback).
func (r *Runtime) Device() Device { return r.device }

// Threads returns the intra-op thread count each session runs: the one
// given, 1 where deterministic, and for 0 (ONNX Runtime's default, one
// per physical core) the physical cores the system lists; 0 where it
// lists none (not Linux, or no sysfs), which only ONNX Runtime knows.
func (r *Runtime) Threads() int {
	if r.threads > 0 {
		return r.threads
	}
	return physicalCores(sysCPUDir)
}

// sysCPUDir is the sysfs directory that lists Linux's CPUs.
const sysCPUDir = "/sys/devices/system/cpu"

// physicalCores counts the physical cores that the sysfs CPU directory
// dir lists: its CPUs' (cpuN) distinct pairs of package and core id, the
// hyperthreads of a core counted once; 0 where none reads.
func physicalCores(dir string) int {
	ids, _ := filepath.Glob(filepath.Join(dir, "cpu[0-9]*", "topology", "core_id"))
	cores := make(map[[2]string]bool, len(ids))
	for _, path := range ids {
		core, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		pkg, err := os.ReadFile(filepath.Join(filepath.Dir(path), "physical_package_id"))
		if err != nil {
			continue
		}
		cores[[2]string{strings.TrimSpace(string(pkg)), strings.TrimSpace(string(core))}] = true
	}
	return len(cores)
}

// SpinningEntry is the session configuration entry that NewSessionOptions
// sets to "0", so that the intra-op threads of a session sleep when a call
// is done instead of spinning for the next one. Every session here runs
// between pieces of Go (sampling, the executor's ops between graphs,
// AdamW), which spinning threads starve of the cores they hold: measured
// on 2 cores with outputs unchanged, SFT of the embedded model runs 2.1x
// faster (30 s against 64 s for 30 steps) and a training step of a
// 4-layer Qwen3-0.6B-shape model 1.5x faster (see the README).
const SpinningEntry = "session.intra_op.allow_spinning"

// NewSessionOptions returns session options with the runtime's thread
// count, intra-op threads that do not spin (SpinningEntry), the shared
// device arena when there is one and, on CUDA, the CUDA execution
// provider appended. The caller destroys them.
func (r *Runtime) NewSessionOptions() (*ort.SessionOptions, error) {
	so, err := ort.NewSessionOptions()
	if err != nil {
		return nil, fmt.Errorf("ONNX Runtime session options: %w", err)
	}
	if err := so.AddSessionConfigEntry(SpinningEntry, "0"); err != nil {
		return nil, errors.Join(fmt.Errorf("ONNX Runtime session config %s=0: %w", SpinningEntry, err), so.Destroy())
	}
	if r.threads > 0 {
		if err := so.SetIntraOpNumThreads(r.threads); err != nil {
			return nil, errors.Join(fmt.Errorf("ONNX Runtime session: set %d threads: %w", r.threads, err), so.Destroy())
		}
	}
	if r.deterministic {
		if err := so.SetInterOpNumThreads(1); err != nil {
			return nil, errors.Join(fmt.Errorf("ONNX Runtime session: set one inter-op thread: %w", err), so.Destroy())
		}
		if err := r.api.SetDeterministicCompute(so, true); err != nil {
			return nil, errors.Join(fmt.Errorf("ONNX Runtime session: %w", err), so.Destroy())
		}
	}
	if r.arena != nil {
		if err := so.AddSessionConfigEntry(ortc.UseEnvAllocatorsEntry, "1"); err != nil {
			return nil, errors.Join(fmt.Errorf("ONNX Runtime session config %s=1: %w", ortc.UseEnvAllocatorsEntry, err), so.Destroy())
		}
	}
	if r.device.Kind == CUDA {
		if err := r.appendCUDA(so); err != nil {
			return nil, errors.Join(err, so.Destroy())
		}
	}
	return so, nil
}

// CUDAProvider is the CUDA execution provider's library in a GPU build
// of ONNX Runtime, beside libonnxruntime.so; CUDALibraries are the CUDA
// libraries it links, which `scripts/setup.sh --cuda` puts beside it (in
// load order: each after what it needs). The NVIDIA driver's libcuda.so.1
// comes from the machine.
const CUDAProvider = "libonnxruntime_providers_cuda.so"

// SharedProvider is the library every execution provider built as a
// shared library links against for ONNX Runtime's interface; it lies
// beside libonnxruntime.so in a GPU build.
const SharedProvider = "libonnxruntime_providers_shared.so"

var CUDALibraries = []string{"libcudart.so.13", "libcublasLt.so.13", "libcublas.so.13", "libcurand.so.10", CUDNN}

// CUDNN is cuDNN's library, which ONNX Runtime's CUDA execution provider
// requires but does not link: it opens it by this name when it first
// needs it, and cuDNN opens its sublibraries beside it. `scripts/setup.sh
// --cuda` puts all of them beside the provider.
const CUDNN = "libcudnn.so.9"

// loadCUDA loads the CUDA libraries found beside the ONNX Runtime
// library (the provider does not look there itself), then checks that
// each library the provider links loads, and cuDNN, so that a failure
// names what is missing (rather than a graph call failing later).
func (r *Runtime) loadCUDA() error {
	dir := filepath.Dir(r.lib)
	provider := filepath.Join(dir, CUDAProvider)
	if _, err := os.Stat(provider); err != nil {
		return fmt.Errorf("ONNX Runtime library %s (from %s) is not a CUDA build: no %s beside it; run %s --cuda to install one, or name one with --ort-lib", r.lib, r.libFrom, CUDAProvider, SetupCommand)
	}
	if _, err := os.Stat(filepath.Join(dir, SharedProvider)); err != nil {
		return fmt.Errorf("ONNX Runtime library %s (from %s) is an incomplete CUDA build: no %s beside it; run %s --cuda to install one, or name one with --ort-lib", r.lib, r.libFrom, SharedProvider, SetupCommand)
	}
	for _, name := range CUDALibraries {
		path := filepath.Join(dir, name)
		if _, err := os.Stat(path); err != nil {
			continue // the machine's own CUDA installation, if any, is used
		}
		if err := ortc.LoadLibrary(path); err != nil {
			return fmt.Errorf("CUDA library %s does not load: %v", path, err)
		}
	}
	// The provider itself is not loaded here: its constructors need ONNX
	// Runtime's interface, which ONNX Runtime hands it when it loads the
	// provider (they crash when loaded alone). Each library it links is
	// loaded instead, so that the loader names the one missing.
	f, err := elf.Open(provider)
	if err != nil {
		return fmt.Errorf("the CUDA execution provider %s: %w", provider, err)
	}
	needed, err := f.ImportedLibraries()
	f.Close()
	if err != nil {
		return fmt.Errorf("the CUDA execution provider %s: %w", provider, err)
	}
	for _, lib := range needed {
		if err := ortc.CheckLibrary(lib); err != nil {
			hint := ""
			if strings.Contains(lib, "libcuda.so") {
				hint = " (libcuda.so.1 is the NVIDIA driver's: no driver is installed, or no GPU)"
			}
			return fmt.Errorf("the CUDA execution provider %s does not load: %v%s", provider, err, hint)
		}
	}
	if err := ortc.CheckLibrary(CUDNN); err != nil {
		return fmt.Errorf("cuDNN, which the CUDA execution provider %s opens when it runs, does not load: %v; run %s --cuda to install it beside the provider, or put the directory of %s on LD_LIBRARY_PATH", provider, err, SetupCommand, CUDNN)
	}
	return nil
}

func (r *Runtime) appendCUDA(so *ort.SessionOptions) error {
	co, err := ort.NewCUDAProviderOptions()
	if err != nil {
		return fmt.Errorf("ONNX Runtime library %s has no CUDA execution provider (CUDA provider options: %v)", r.lib, err)
	}
	defer co.Destroy()
	options := map[string]string{"device_id": strconv.Itoa(r.device.ID)}
	maps.Copy(options, r.cudaOptions)
	if err := co.Update(options); err != nil {
		return fmt.Errorf("ONNX Runtime library %s cannot set up the CUDA execution provider for device %d with options %v: %w", r.lib, r.device.ID, options, err)
	}
	if err := so.AppendExecutionProviderCUDA(co); err != nil {
		return fmt.Errorf("ONNX Runtime library %s cannot append the CUDA execution provider for device %d: %v", r.lib, r.device.ID, err)
	}
	return nil
}
