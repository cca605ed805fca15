package rollout_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/spiral-rl/spiral/rollout"
)

// exchange is one recorded request and the answer the engine's documented
// API gives it.
type exchange struct {
	method, path string
	body         map[string]string
	status       int
	answer       string
}

// recordedEngine answers each request with the next recorded exchange,
// checking that the request is the recorded one.
type recordedEngine struct {
	t    *testing.T
	mu   sync.Mutex
	want []exchange
	n    int
}

func (e *recordedEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n >= len(e.want) {
		e.t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	x := e.want[e.n]
	e.n++
	var body map[string]string
	_ = json.NewDecoder(r.Body).Decode(&body)
	if r.Method != x.method || r.URL.Path != x.path {
		e.t.Errorf("request %d: %s %s, want %s %s", e.n-1, r.Method, r.URL.Path, x.method, x.path)
	}
	for k, v := range x.body {
		if body[k] != v {
			e.t.Errorf("request %d (%s): %s = %q, want %q", e.n-1, x.path, k, body[k], v)
		}
	}
	w.WriteHeader(x.status)
	_, _ = w.Write([]byte(x.answer))
}

// TestVLLMLoRASync replays vLLM's runtime LoRA API (docs: "Dynamically
// serving LoRA Adapters"): unload the versions an earlier run left
// loaded (vLLM refuses to load a name it holds: a resumed run would
// reload its last), load the new adapter, send requests to it, unload
// the previous one, which answer in plain text; version directories
// other than the served one's go, those an earlier run left too.
func TestVLLMLoRASync(t *testing.T) {
	dir := t.TempDir()
	step := func(n string) string { return filepath.Join(dir, "spiral-step-"+n) }
	for _, left := range []string{step("000000"), step("000007"), filepath.Join(dir, "mine")} {
		require.NoError(t, os.MkdirAll(left, 0o755))
	}
	eng := &recordedEngine{t: t, want: []exchange{
		{"GET", "/v1/models", nil, 200, `{"object":"list","data":[{"id":"served","object":"model"},{"id":"spiral-step-000000","object":"model","parent":"served"},{"id":"spiral-step-000007","object":"model","parent":"served"}]}`},
		{"POST", "/v1/unload_lora_adapter", map[string]string{"lora_name": "spiral-step-000000"}, 200, "Success: LoRA adapter 'spiral-step-000000' removed successfully."},
		{"POST", "/v1/unload_lora_adapter", map[string]string{"lora_name": "spiral-step-000007"}, 200, "Success: LoRA adapter 'spiral-step-000007' removed successfully."},
		{"POST", "/v1/load_lora_adapter", map[string]string{"lora_name": "spiral-step-000000", "lora_path": step("000000")}, 200, "Success: LoRA adapter 'spiral-step-000000' added successfully."},
		{"POST", "/v1/load_lora_adapter", map[string]string{"lora_name": "spiral-step-000001", "lora_path": step("000001")}, 200, "Success: LoRA adapter 'spiral-step-000001' added successfully."},
		{"POST", "/v1/unload_lora_adapter", map[string]string{"lora_name": "spiral-step-000000"}, 200, "Success: LoRA adapter 'spiral-step-000000' removed successfully."},
		{"POST", "/v1/load_lora_adapter", map[string]string{"lora_name": "spiral-step-000002", "lora_path": step("000002")}, 400, `{"object":"error","message":"The lora adapter 'spiral-step-000002' cannot be found.","type":"BadRequestError","code":400}`},
		// A refused load is checked against what the engine serves.
		{"GET", "/v1/models", nil, 200, `{"object":"list","data":[{"id":"served","object":"model"},{"id":"spiral-step-000001","object":"model","parent":"served"}]}`},
	}}
	srv := httptest.NewServer(eng)
	defer srv.Close()
	o := syncEngine(t, srv.URL)
	var exported []string
	s := &rollout.VLLMLoRASync{Engine: o, Dir: dir, Export: func(_ context.Context, d string) error {
		exported = append(exported, d)
		return os.MkdirAll(d, 0o755)
	}}
	ctx := context.Background()
	require.NoError(t, s.Sync(ctx, 0))
	require.Equal(t, "spiral-step-000000", o.Model(), "requests go to the loaded adapter")
	require.NoDirExists(t, step("000007"), "an earlier run's version")
	require.DirExists(t, filepath.Join(dir, "mine"), "not a version")
	require.NoError(t, s.Sync(ctx, 1))
	require.Equal(t, "spiral-step-000001", s.Version())
	require.NoDirExists(t, step("000000"), "the unloaded version's files are removed")
	require.DirExists(t, step("000001"))
	err := s.Sync(ctx, 2)
	require.ErrorContains(t, err, "cannot be found")
	require.Equal(t, "spiral-step-000001", o.Model(), "a failed load keeps the served version")
	require.Equal(t, []string{step("000000"), step("000001"), step("000002")}, exported)
	require.Equal(t, len(eng.want), eng.n, "every recorded exchange made")
}

// TestSGLangDiskSync replays SGLang's update_weights_from_disk (at the
// server root, not under /v1), which answers {"success", "message"}.
// The versions an earlier run left in --sync-dir go; a directory named
// like one but no version's (spiral-step-000001-good, a version the user
// copied aside to keep) went with them, as every directory whose name
// began spiral-step- did, though README says only versions go: it stays.
func TestSGLangDiskSync(t *testing.T) {
	dir := t.TempDir()
	// A version an earlier run left goes with the first sync; what is no
	// version's stays (a version copied aside to keep, notes).
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "spiral-step-000002"), 0o755))
	for _, kept := range []string{"spiral-step-000001-good", "notes"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, kept), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("mine"), 0o644))
	eng := &recordedEngine{t: t, want: []exchange{
		{"POST", "/update_weights_from_disk", map[string]string{"model_path": filepath.Join(dir, "spiral-step-000003")}, 200, `{"success": true, "message": "Succeeded to update model weights."}`},
		{"POST", "/update_weights_from_disk", map[string]string{"model_path": filepath.Join(dir, "spiral-step-000004")}, 200, `{"success": false, "message": "Failed to get weights iterator: shape mismatch"}`},
	}}
	srv := httptest.NewServer(eng)
	defer srv.Close()
	o := syncEngine(t, srv.URL)
	s := &rollout.SGLangDiskSync{Engine: o, Dir: dir, Export: mkdirExport}
	require.NoError(t, s.Sync(context.Background(), 3))
	require.Equal(t, "spiral-step-000003", s.Version())
	require.NoDirExists(t, filepath.Join(dir, "spiral-step-000002"))
	for _, kept := range []string{"spiral-step-000001-good", "notes"} {
		require.DirExists(t, filepath.Join(dir, kept), "no version's: the user's")
	}
	require.FileExists(t, filepath.Join(dir, "README.md"))
	require.ErrorContains(t, s.Sync(context.Background(), 4), "shape mismatch")
	require.Equal(t, "served", o.Model(), "SGLang keeps serving under its own name")
}

// TestSGLangDiskSyncRefused: a load SGLang refuses names the weights it
// was asked to load, whether refused with a 200 or a 400 (SGLang's
// status for {"success": false}).
func TestSGLangDiskSyncRefused(t *testing.T) {
	for _, status := range []int{200, 400} {
		dir := t.TempDir()
		version := filepath.Join(dir, "spiral-step-000001")
		eng := &recordedEngine{t: t, want: []exchange{
			{"POST", "/update_weights_from_disk", map[string]string{"model_path": version}, status, `{"success": false, "message": "Failed to get weights iterator: No such file"}`},
		}}
		srv := httptest.NewServer(eng)
		s := &rollout.SGLangDiskSync{Engine: syncEngine(t, srv.URL), Dir: dir, Export: mkdirExport}
		err := s.Sync(context.Background(), 1)
		srv.Close()
		require.Error(t, err)
		require.Contains(t, err.Error(), "rollout: weight sync: "+srv.URL+"/update_weights_from_disk refused "+version+": ", status)
		require.True(t, strings.HasSuffix(err.Error(), "Failed to get weights iterator: No such file"), "%d: %v", status, err)
		require.Equal(t, "", s.Version())
	}
}

// TestVLLMLoRASyncRefusedIn200: a load or unload answered with a 200
// whose body is an error ({"success": false}, an error object) failed:
// the sync fails, and requests keep going to the version served, so that
// no rollout is taken from weights the engine does not hold.
func TestVLLMLoRASyncRefusedIn200(t *testing.T) {
	for _, answer := range []string{
		`{"success": false, "message": "adapter_config.json not found"}`,
		`{"object":"error","message":"adapter_config.json not found","type":"BadRequestError","code":400}`,
		`{"error":{"message":"adapter_config.json not found"}}`,
	} {
		dir := t.TempDir()
		eng := &recordedEngine{t: t, want: []exchange{
			{"GET", "/v1/models", nil, 200, `{"object":"list","data":[{"id":"served","object":"model"}]}`},
			{"POST", "/v1/load_lora_adapter", map[string]string{"lora_name": "spiral-step-000001"}, 200, answer},
			{"GET", "/v1/models", nil, 200, `{"object":"list","data":[{"id":"served","object":"model"}]}`},
		}}
		srv := httptest.NewServer(eng)
		o := syncEngine(t, srv.URL)
		s := &rollout.VLLMLoRASync{Engine: o, Dir: dir, Export: mkdirExport}
		err := s.Sync(context.Background(), 1)
		srv.Close()
		require.ErrorContains(t, err, "load adapter spiral-step-000001: rollout: engine: "+srv.URL+"/v1/load_lora_adapter: HTTP 200, but the answer is an error: adapter_config.json not found", answer)
		require.Equal(t, "served", o.Model(), answer)
		require.Equal(t, "", s.Version(), answer)
	}
}

// TestVLLMLoRASyncNotEnabled: a vLLM started without runtime LoRA
// updating has no /v1/load_lora_adapter (FastAPI's 404): the error says
// how to start it, not only "Not Found".
func TestVLLMLoRASyncNotEnabled(t *testing.T) {
	eng := &recordedEngine{t: t, want: []exchange{
		{"GET", "/v1/models", nil, 200, `{"object":"list","data":[{"id":"served","object":"model"}]}`},
		{"POST", "/v1/load_lora_adapter", map[string]string{"lora_name": "spiral-step-000001"}, 404, `{"detail":"Not Found"}`},
		{"GET", "/v1/models", nil, 200, `{"object":"list","data":[{"id":"served","object":"model"}]}`},
	}}
	srv := httptest.NewServer(eng)
	defer srv.Close()
	o := syncEngine(t, srv.URL)
	s := &rollout.VLLMLoRASync{Engine: o, Dir: t.TempDir(), Export: mkdirExport}
	err := s.Sync(context.Background(), 1)
	require.EqualError(t, err, "rollout: weight sync: load adapter spiral-step-000001: rollout: engine: "+srv.URL+`/v1/load_lora_adapter: HTTP 404: {"detail":"Not Found"} `+
		"(vLLM serves it when started with --enable-lora and the environment variable VLLM_ALLOW_RUNTIME_LORA_UPDATING=True)")
	require.Equal(t, "served", o.Model())
}

// TestVLLMLoRASyncNoAdapterFound: vLLM answers a 404 too when the
// adapter's directory is not there on its machine (a --sync-dir that is
// not shared), with its LoRAAdapterNotFoundError's message in either of
// its error shapes: the error says where the engine looked and that
// --sync-dir must be the same path there, not how to enable runtime
// LoRA loading, which it has.
func TestVLLMLoRASyncNoAdapterFound(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "spiral-step-000001")
	msg := "Loading lora spiral-step-000001 failed: No adapter found for " + path
	for _, tc := range []struct{ name, answer string }{
		{"error object", `{"error":{"message":"` + msg + `","type":"NotFoundError","param":null,"code":404}}`},
		{"older vLLM", `{"object":"error","message":"` + msg + `","type":"NotFoundError","param":null,"code":404}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng := &recordedEngine{t: t, want: []exchange{
				{"GET", "/v1/models", nil, 200, `{"object":"list","data":[{"id":"served","object":"model"}]}`},
				{"POST", "/v1/load_lora_adapter", map[string]string{"lora_name": "spiral-step-000001", "lora_path": path}, 404, tc.answer},
				{"GET", "/v1/models", nil, 200, `{"object":"list","data":[{"id":"served","object":"model"}]}`},
			}}
			srv := httptest.NewServer(eng)
			defer srv.Close()
			o := syncEngine(t, srv.URL)
			s := &rollout.VLLMLoRASync{Engine: o, Dir: dir, Export: mkdirExport}
			err := s.Sync(context.Background(), 1)
			require.EqualError(t, err, "rollout: weight sync: load adapter spiral-step-000001: rollout: engine: "+srv.URL+"/v1/load_lora_adapter: HTTP 404: "+msg+
				" (the engine found no adapter at "+path+", where spiral wrote it: --sync-dir must be the same path on the engine's machine, a filesystem both share)")
			require.Equal(t, "served", o.Model())
		})
	}
}

// TestVLLMLoRASyncLostAnswer: a load whose answer the connection lost is
// retried and refused as already loaded (vLLM's 400); the engine lists
// the adapter, so the sync goes on to it rather than failing the run.
func TestVLLMLoRASyncLostAnswer(t *testing.T) {
	const name = "spiral-step-000003"
	var mu sync.Mutex
	loads := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/v1/models":
			served := `{"id":"served","object":"model"}`
			if loads > 0 {
				served += `,{"id":"` + name + `","object":"model","parent":"served"}`
			}
			_, _ = w.Write([]byte(`{"object":"list","data":[` + served + `]}`))
		case "/v1/load_lora_adapter":
			loads++
			if loads == 1 { // loaded, but the answer never arrives
				dropAnswer(t, w)
				return
			}
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"object":"error","message":"The lora adapter '` + name + `' has already been loaded.","type":"InvalidUserInput","code":400}`))
		default:
			t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
		}
	}))
	defer srv.Close()
	o := syncEngine(t, srv.URL)
	s := &rollout.VLLMLoRASync{Engine: o, Dir: t.TempDir(), Export: mkdirExport}
	require.NoError(t, s.Sync(context.Background(), 3))
	require.Equal(t, 2, loads, "the lost answer's load was retried")
	require.Equal(t, name, o.Model())
	require.Equal(t, name, s.Version())
}

// TestSyncRelativeDir: a relative sync directory is sent to the engine
// as the absolute path of the version spiral wrote: the server resolves
// a relative one against its own working directory, where it names
// another directory (or an earlier run's files), not the one written.
func TestSyncRelativeDir(t *testing.T) {
	for _, tc := range []struct {
		name string
		want func(path string) []exchange
		sync func(o *rollout.OpenAI, export rollout.Export) rollout.WeightSync
	}{
		{"vllm-lora", func(path string) []exchange {
			return []exchange{
				{"GET", "/v1/models", nil, 200, `{"object":"list","data":[{"id":"served","object":"model"}]}`},
				{"POST", "/v1/load_lora_adapter", map[string]string{"lora_name": "spiral-step-000001", "lora_path": path}, 200, "Success: LoRA adapter 'spiral-step-000001' added successfully."},
			}
		}, func(o *rollout.OpenAI, export rollout.Export) rollout.WeightSync {
			return &rollout.VLLMLoRASync{Engine: o, Dir: "sync", Export: export}
		}},
		{"sglang", func(path string) []exchange {
			return []exchange{
				{"POST", "/update_weights_from_disk", map[string]string{"model_path": path}, 200, `{"success": true, "message": "Succeeded to update model weights."}`},
			}
		}, func(o *rollout.OpenAI, export rollout.Export) rollout.WeightSync {
			return &rollout.SGLangDiskSync{Engine: o, Dir: "sync", Export: export}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cwd := t.TempDir()
			t.Chdir(cwd)
			require.NoError(t, os.Mkdir("sync", 0o755))
			want := filepath.Join(cwd, "sync", "spiral-step-000001")
			eng := &recordedEngine{t: t, want: tc.want(want)}
			srv := httptest.NewServer(eng)
			defer srv.Close()
			o := syncEngine(t, srv.URL)
			var exported string
			s := tc.sync(o, func(_ context.Context, d string) error {
				exported = d
				return os.MkdirAll(d, 0o755)
			})
			require.NoError(t, s.Sync(context.Background(), 1))
			require.Equal(t, want, exported, "the version is written where the engine is told to read it")
			require.Equal(t, len(eng.want), eng.n, "every recorded exchange made")
			require.DirExists(t, want)
		})
	}
}

// TestVLLMLoRASyncLostUnloadAnswer: an unload whose answer the
// connection lost is retried and refused as not found (vLLM's 404); the
// engine no longer lists the adapter, so the sync goes on rather than
// failing the run: the previous version's unload, and that of a version
// an earlier run left, as a load's lost answer is (LostAnswer above).
func TestVLLMLoRASyncLostUnloadAnswer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		left   []string // adapters loaded before the first sync
		steps  []int
		unload string // the adapter whose unload loses its answer
	}{
		{"previous version", nil, []int{1, 2}, "spiral-step-000001"},
		{"an earlier run's version", []string{"spiral-step-000005"}, []int{1}, "spiral-step-000005"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			loaded := map[string]bool{}
			for _, n := range tc.left {
				loaded[n] = true
			}
			unloads := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				var body map[string]string
				_ = json.NewDecoder(r.Body).Decode(&body)
				name := body["lora_name"]
				switch r.URL.Path {
				case "/v1/models":
					data := `{"id":"served","object":"model"}`
					for n := range loaded {
						data += `,{"id":"` + n + `","object":"model","parent":"served"}`
					}
					_, _ = w.Write([]byte(`{"object":"list","data":[` + data + `]}`))
				case "/v1/load_lora_adapter":
					loaded[name] = true
					_, _ = w.Write([]byte("Success: LoRA adapter '" + name + "' added successfully."))
				case "/v1/unload_lora_adapter":
					if !loaded[name] {
						w.WriteHeader(http.StatusNotFound)
						_, _ = w.Write([]byte(`{"object":"error","message":"The lora adapter '` + name + `' cannot be found.","type":"NotFoundError","code":404}`))
						return
					}
					delete(loaded, name)
					if name == tc.unload {
						unloads++
						// Unloaded, but the answer never arrives.
						dropAnswer(t, w)
						return
					}
					_, _ = w.Write([]byte("Success: LoRA adapter '" + name + "' removed successfully."))
				default:
					t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
				}
			}))
			defer srv.Close()
			o := syncEngine(t, srv.URL)
			s := &rollout.VLLMLoRASync{Engine: o, Dir: t.TempDir(), Export: mkdirExport}
			for _, step := range tc.steps {
				require.NoError(t, s.Sync(context.Background(), step))
			}
			last := fmt.Sprintf("spiral-step-%06d", tc.steps[len(tc.steps)-1])
			require.Equal(t, 1, unloads, "the lost answer's unload was made")
			require.Equal(t, last, o.Model())
			require.Equal(t, last, s.Version())
			mu.Lock()
			defer mu.Unlock()
			require.Equal(t, map[string]bool{last: true}, loaded, "only the served version is loaded")
		})
	}
}

// mkdirExport is a sync's export that writes an empty version directory.
func mkdirExport(_ context.Context, dir string) error { return os.MkdirAll(dir, 0o755) }

// syncEngine is the OpenAI-compatible engine at url that the sync tests
// talk to.
func syncEngine(t *testing.T, url string) *rollout.OpenAI {
	t.Helper()
	o, err := rollout.NewOpenAI(engineConfig(url))
	require.NoError(t, err)
	return o
}

// dropAnswer closes the connection of the request w answers, as a lost
// answer would: the engine acted, the client never hears of it.
func dropAnswer(t *testing.T, w http.ResponseWriter) {
	t.Helper()
	conn, _, err := w.(http.Hijacker).Hijack()
	require.NoError(t, err)
	_ = conn.Close()
}

// TestSGLangDiskSyncNoEndpoint: a server without SGLang's
// /update_weights_from_disk (a vLLM given --engine-sync sglang answers
// FastAPI's 404) did not refuse the weights: the error says the endpoint
// is missing and which sync a vLLM takes, not that the weights were
// refused.
func TestSGLangDiskSyncNoEndpoint(t *testing.T) {
	dir := t.TempDir()
	eng := &recordedEngine{t: t, want: []exchange{
		{"POST", "/update_weights_from_disk", map[string]string{"model_path": filepath.Join(dir, "spiral-step-000001")}, 404, `{"detail":"Not Found"}`},
	}}
	srv := httptest.NewServer(eng)
	defer srv.Close()
	s := &rollout.SGLangDiskSync{Engine: syncEngine(t, srv.URL), Dir: dir, Export: mkdirExport}
	err := s.Sync(context.Background(), 1)
	require.EqualError(t, err, "rollout: weight sync: "+srv.URL+`/update_weights_from_disk: HTTP 404: {"detail":"Not Found"} `+
		"(the server has no such endpoint: --engine-sync sglang needs SGLang's server; a vLLM takes --engine-sync vllm-lora)")
	require.Equal(t, "", s.Version())
}

// TestSyncCheck: Check finds an engine restarted since the last sync,
// which serves the weights it was started with under the same name:
// SGLang's /get_model_info names another model_path than the directory
// loaded, vLLM's /v1/models no longer lists the adapter. Before the
// first sync nothing is asked.
func TestSyncCheck(t *testing.T) {
	dir := t.TempDir()
	version := filepath.Join(dir, "spiral-step-000001")
	const hint = ": was it restarted? The rollouts since are not the policy's; run spiral train again, which resumes from its last checkpoint and loads its weights into the engine first"
	for _, tc := range []struct {
		name  string
		sync  func(o *rollout.OpenAI) rollout.WeightSync
		want  []exchange
		check string // Check's error after the sync; "" for none
	}{
		{"SGLang serving the weights loaded", func(o *rollout.OpenAI) rollout.WeightSync {
			return &rollout.SGLangDiskSync{Engine: o, Dir: dir, Export: mkdirExport}
		}, []exchange{
			{"POST", "/update_weights_from_disk", map[string]string{"model_path": version}, 200, `{"success": true, "message": "Succeeded to update model weights."}`},
			{"GET", "/get_model_info", nil, 200, `{"model_path": "` + version + `", "tokenizer_path": "/m", "is_generation": true}`},
		}, ""},
		{"SGLang restarted", func(o *rollout.OpenAI) rollout.WeightSync {
			return &rollout.SGLangDiskSync{Engine: o, Dir: dir, Export: mkdirExport}
		}, []exchange{
			{"POST", "/update_weights_from_disk", map[string]string{"model_path": version}, 200, `{"success": true, "message": "Succeeded to update model weights."}`},
			{"GET", "/get_model_info", nil, 200, `{"model_path": "/m", "tokenizer_path": "/m", "is_generation": true}`},
		}, "rollout: weight sync: URL/get_model_info: the engine serves /m, not " + version + ", the weights spiral loaded" + hint},
		{"vLLM serving the adapter loaded", func(o *rollout.OpenAI) rollout.WeightSync {
			return &rollout.VLLMLoRASync{Engine: o, Dir: dir, Export: mkdirExport}
		}, []exchange{
			{"GET", "/v1/models", nil, 200, `{"object":"list","data":[{"id":"served","object":"model"}]}`},
			{"POST", "/v1/load_lora_adapter", map[string]string{"lora_name": "spiral-step-000001"}, 200, "Success"},
			{"GET", "/v1/models", nil, 200, `{"object":"list","data":[{"id":"served"},{"id":"spiral-step-000001"}]}`},
		}, ""},
		{"vLLM restarted", func(o *rollout.OpenAI) rollout.WeightSync {
			return &rollout.VLLMLoRASync{Engine: o, Dir: dir, Export: mkdirExport}
		}, []exchange{
			{"GET", "/v1/models", nil, 200, `{"object":"list","data":[{"id":"served","object":"model"}]}`},
			{"POST", "/v1/load_lora_adapter", map[string]string{"lora_name": "spiral-step-000001"}, 200, "Success"},
			{"GET", "/v1/models", nil, 200, `{"object":"list","data":[{"id":"served","object":"model"}]}`},
		}, "rollout: weight sync: URL/v1/models does not list adapter spiral-step-000001, which spiral loaded" + hint},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng := &recordedEngine{t: t, want: tc.want}
			srv := httptest.NewServer(eng)
			defer srv.Close()
			s := tc.sync(syncEngine(t, srv.URL))
			require.NoError(t, s.Check(context.Background()), "before the first sync")
			require.NoError(t, s.Sync(context.Background(), 1))
			err := s.Check(context.Background())
			if tc.check == "" {
				require.NoError(t, err)
			} else {
				require.EqualError(t, err, strings.ReplaceAll(tc.check, "URL", srv.URL))
			}
			require.Equal(t, len(tc.want), eng.n, "requests made")
		})
	}
}
