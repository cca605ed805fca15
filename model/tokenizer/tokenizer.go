package tokenizer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	hf "github.com/daulet/tokenizers"

	"github.com/spiral-rl/spiral/model/jsonerr"
	"github.com/spiral-rl/spiral/model/smallfile"
)

// File names looked up by Load when it is given a directory.
const (
	TokenizerFile = "tokenizer.json"
	ConfigFile    = "tokenizer_config.json"
	// TemplateFile is where transformers saves a chat template; it
	// takes the place of tokenizer_config.json's chat_template.
	TemplateFile = "chat_template.jinja"
)

// Tokenizer encodes and decodes text with a Hugging Face tokenizer.json and
// knows the ChatML special tokens. Create it with Load or FromBytes and
// release it with Close.
type Tokenizer struct {
	hf       *hf.Tokenizer
	vocab    *vocabulary
	imStart  int32
	imEnd    int32
	eot      int32 // <|endoftext|>'s id, where hasEOT
	hasEOT   bool
	template string // chat template found by Load, if any
	// bos is the text EncodeChat writes before the messages: the
	// config's bos_token where the template writes it first, else "".
	bos string
	// genSuffix is the text EncodeChat writes after the generation
	// prompt: what the template's generation prompt writes after
	// "<|im_start|>assistant\n" (Qwen3-*-Thinking-2507's "<think>\n"),
	// else "".
	genSuffix string
	// replyHead is what AssistantReply writes before the reasoning
	// (replyHead: Qwen3's hybrid template's "<think>\n"), else "".
	replyHead string
	// templateWarning says how the prompts differ from the template's
	// ("" where they do not, as far as Load can tell).
	templateWarning string
}

// Load reads a tokenizer. path is either a tokenizer.json file or a
// directory holding tokenizer.json; the tokenizer_config.json and
// chat_template.jinja beside the file (in the directory), optionally
// there, are read too, as the exports copy them with the tokenizer
// (model.SideFiles). When the config is present it must be valid JSON.
// The chat template (chat_template.jinja, else the config's
// chat_template, as transformers takes them) must be ChatML (it must
// mention <|im_start|>, and a generation prompt it writes as literal
// text must begin "<|im_start|>assistant\n"), since RenderChat is the
// only template this package renders; what its generation prompt writes
// after that is read (generationSuffix) for EncodeChat.
// Errors name the file and the problem.
func Load(path string) (*Tokenizer, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: load %q: %w", path, err)
	}
	file := path
	if info.IsDir() {
		file = filepath.Join(path, TokenizerFile)
	}
	dir := filepath.Dir(file)
	data, err := smallfile.Read(file, smallfile.Limit)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: load %q: %w", file, err)
	}
	t, err := fromBytes(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: load %q: %w", file, err)
	}
	p, err := readPrompting(dir)
	if err != nil {
		return nil, errors.Join(err, t.Close())
	}
	t.template, t.bos, t.genSuffix, t.templateWarning = p.template, p.bos, p.genSuffix, p.warning
	t.replyHead = replyHead(p.template, p.genSuffix)
	return t, nil
}

// Fingerprint identifies the ids that a Tokenizer Load(path) returns
// gives texts and prompts: 32 hex digits of the SHA-256 of the
// tokenizer.json's content (canonicalJSON: its JSON written again
// compactly with each object's keys sorted and a BPE's merges in one
// form, so that the same tokenizer saved again by another tool or
// version, with other whitespace, key order or merges' form, keeps it)
// and of what EncodeChat writes around RenderChat's text as the chat
// template beside it has it (the BOS token, the generation prompt's
// suffix). A chat template that differs only where spiral's prompts do
// not follow it (tool calls, a default system turn) leaves it as it is.
// The errors are Load's, for the files it reads, and a tokenizer.json
// that is not JSON, naming it.
func Fingerprint(path string) (string, error) {
	return fingerprint(path, true)
}

// ByteFingerprint is Fingerprint of tokenizer.json's bytes as they are,
// as versions before Fingerprint read its content took it: a run those
// versions recorded it in resumes with the same file (rl.RunSettings'
// and rl.SFTSettings' TokenizerBytes).
func ByteFingerprint(path string) (string, error) {
	return fingerprint(path, false)
}

// fingerprint is Fingerprint, of tokenizer.json's content where
// canonical, else of its bytes (ByteFingerprint).
func fingerprint(path string, canonical bool) (string, error) {
	file := path
	if info, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("tokenizer: load %q: %w", path, err)
	} else if info.IsDir() {
		file = filepath.Join(path, TokenizerFile)
	}
	data, err := smallfile.Read(file, smallfile.Limit)
	if err != nil {
		return "", fmt.Errorf("tokenizer: load %q: %w", file, err)
	}
	if canonical {
		if data, err = canonicalJSON(data); err != nil {
			return "", fmt.Errorf("tokenizer: load %q: %w", file, err)
		}
	}
	p, err := readPrompting(filepath.Dir(file))
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, b := range [][]byte{data, []byte(p.bos), []byte(p.genSuffix)} {
		fmt.Fprintf(h, "%d\x00", len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// canonicalJSON is the tokenizer.json data written again compactly,
// each object's keys sorted, its numbers as float64 (as json.Number,
// "1.0" and "1e-5" would stay apart from "1" and "1e-05"; tokenizers
// reads them as one value), and a BPE model's merges in tokenizers 0.20's
// form, pairs (["a", "b"], where earlier versions saved "a b", which a
// re-save converts).
func canonicalJSON(data []byte) ([]byte, error) {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	root, _ := v.(map[string]any)
	m, _ := root["model"].(map[string]any)
	merges, _ := m["merges"].([]any)
	for i, x := range merges {
		s, _ := x.(string)
		if a, b, ok := strings.Cut(s, " "); ok && !strings.Contains(b, " ") {
			merges[i] = []any{a, b}
		}
	}
	return json.Marshal(v) // maps' keys sorted
}

// prompting is what Load reads of the chat template beside a
// tokenizer.json: the template, the text EncodeChat writes before the
// messages (bos) and after the generation prompt (genSuffix), and how
// spiral's prompts differ from the template's (warning).
type prompting struct {
	template, bos, genSuffix, warning string
}

// readPrompting reads the chat template in dir (readChatTemplate) as
// Load takes it; its errors name the file.
func readPrompting(dir string) (prompting, error) {
	tmpl, bos, from, err := readChatTemplate(dir)
	if err != nil {
		return prompting{}, fmt.Errorf("tokenizer: load %q: %w", from, err)
	}
	p := prompting{template: tmpl}
	var warnings []string
	if bos != "" {
		first, elsewhere := bosPlacement(tmpl)
		if first {
			p.bos = bos
		}
		if elsewhere {
			warnings = append(warnings, fmt.Sprintf("%s: chat_template writes bos_token elsewhere than once before the messages, which spiral's ChatML prompts do not follow: they differ there from transformers' apply_chat_template (spiral writes the BOS token only where a template writes {{ bos_token }} first)", from))
		}
	}
	suffix, warning, err := generationSuffix(tmpl)
	if err != nil {
		return prompting{}, fmt.Errorf("tokenizer: load %q: %w", from, err)
	}
	p.genSuffix = suffix
	if warning != "" {
		warnings = append(warnings, from+": "+warning)
	}
	if system := defaultSystem(tmpl); system != "" {
		warnings = append(warnings, fmt.Sprintf("%s: chat_template writes a system turn of its own (%q), which spiral's prompts, one user turn, leave out: they differ there from transformers' apply_chat_template", from, system))
	}
	p.warning = strings.Join(warnings, "; ")
	return p, nil
}

// FromBytes builds a Tokenizer from the contents of a tokenizer.json.
func FromBytes(data []byte) (*Tokenizer, error) {
	t, err := fromBytes(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return t, nil
}

func fromBytes(data []byte) (*Tokenizer, error) {
	v, err := parseVocabulary(data)
	if err != nil {
		return nil, err
	}
	t := &Tokenizer{vocab: v}
	var missing []string
	for _, s := range []struct {
		name string
		dst  *int32
	}{{IMStartToken, &t.imStart}, {IMEndToken, &t.imEnd}} {
		id, ok := v.addedID(s.name)
		if !ok {
			missing = append(missing, s.name)
		}
		*s.dst = id
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("added_tokens lacks %s (ChatML needs <|im_start|> and <|im_end|> as added tokens)", strings.Join(missing, ", "))
	}
	// Qwen's and spiral's tokenizers have <|endoftext|> too; Hermes-style
	// ChatML on a Mistral or Llama base adds only the two above.
	t.eot, t.hasEOT = v.addedID(EndOfTextToken)
	// The default options leave special-token matching on: "<|im_start|>"
	// written in the text encodes to its single id.
	h, err := hf.FromBytes(data)
	if err != nil {
		return nil, fmt.Errorf("native tokenizers library rejected the file: %w", err)
	}
	t.hf = h
	return t, nil
}

// addedID returns the id of an added token by content.
func (v *vocabulary) addedID(content string) (int32, bool) {
	for _, a := range v.added {
		if a.Content == content {
			return a.ID, true
		}
	}
	return 0, false
}

// readChatTemplate validates the tokenizer_config.json and
// chat_template.jinja in dir, and returns the chat template ("" when
// there is none), the config's bos_token ("" when it has none) and the
// file the template comes from, or the file an error is in. Missing
// files are not an error.
func readChatTemplate(dir string) (tmpl, bos, from string, err error) {
	config := filepath.Join(dir, ConfigFile)
	tmpl, bos, noDefault, err := readConfigTemplate(config)
	if err != nil {
		return "", "", config, err
	}
	from = config
	file := filepath.Join(dir, TemplateFile)
	switch data, err := smallfile.Read(file, smallfile.Limit); {
	case err == nil: // transformers reads it in place of the config's
		tmpl, from = string(data), file
	case !errors.Is(err, fs.ErrNotExist):
		return "", "", file, err
	case noDefault != nil:
		return "", "", config, noDefault
	}
	if tmpl != "" && !strings.Contains(tmpl, IMStartToken) {
		return "", "", from, errors.New("chat_template is not ChatML (it never writes <|im_start|>); only ChatML is supported")
	}
	return tmpl, bos, from, nil
}

// readConfigTemplate validates tokenizer_config.json at path and returns
// its chat_template ("" when there is none) and bos_token (a string, or
// an AddedToken object's content, as transformers reads it; "" when
// there is none). A list of named templates
// gives the one named "default" (the last of that name), even empty, as
// transformers' apply_chat_template takes it; a list without one is
// noDefault, the error transformers raises, which a chat_template.jinja
// beside the config overrides. A missing file is not an error.
func readConfigTemplate(path string) (tmpl, bos string, noDefault, err error) {
	data, err := smallfile.Read(path, smallfile.Limit)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", nil, nil
	}
	if err != nil {
		return "", "", nil, err
	}
	var cfg struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
		BOSToken     json.RawMessage `json:"bos_token"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return "", "", nil, fmt.Errorf("malformed JSON: %w", jsonerr.Describe(data, &cfg, err))
	}
	if len(cfg.BOSToken) > 0 && string(cfg.BOSToken) != "null" {
		var added struct {
			Content *string `json:"content"`
		}
		if json.Unmarshal(cfg.BOSToken, &bos) != nil {
			if json.Unmarshal(cfg.BOSToken, &added) != nil || added.Content == nil {
				return "", "", nil, errors.New(`bos_token is neither a string nor an object with a "content" string`)
			}
			bos = *added.Content
		}
	}
	if len(cfg.ChatTemplate) == 0 || string(cfg.ChatTemplate) == "null" {
		return "", bos, nil, nil
	}
	// Either one template string or a list of {name, template}.
	if err := json.Unmarshal(cfg.ChatTemplate, &tmpl); err == nil {
		return tmpl, bos, nil, nil
	}
	var named []struct{ Name, Template string }
	if err := json.Unmarshal(cfg.ChatTemplate, &named); err != nil {
		return "", "", nil, errors.New("chat_template is neither a string nor a list of {name, template}")
	}
	byName := make(map[string]string, len(named))
	for _, n := range named {
		byName[n.Name] = n.Template
	}
	if t, ok := byName["default"]; ok {
		return t, bos, nil, nil
	}
	names := make([]string, 0, len(byName))
	for name := range byName {
		names = append(names, strconv.Quote(name))
	}
	slices.Sort(names)
	return "", bos, fmt.Errorf("chat_template lists templates named [%s] and none named \"default\", which transformers' apply_chat_template needs (it raises an error); name one \"default\" or give a %s", strings.Join(names, ", "), TemplateFile), nil
}

// Close frees the native tokenizer. The Tokenizer must not be used after.
// Calling Close twice is harmless.
func (t *Tokenizer) Close() error {
	if t.hf != nil {
		err := t.hf.Close()
		t.hf = nil
		if err != nil {
			return fmt.Errorf("tokenizer: close: %w", err)
		}
	}
	return nil
}

// mustBeOpen panics on use after Close, a programmer error that would
// otherwise reach the native library as a null pointer.
func (t *Tokenizer) mustBeOpen() {
	if t.hf == nil {
		panic("tokenizer: use of a closed Tokenizer")
	}
}

// Encode returns the token ids of text, with no special tokens added.
// Special tokens written in text (such as "<|im_end|>") become their single
// ids. NUL characters are dropped (see the package doc); invalid UTF-8
// bytes are encoded as U+FFFD. Encode of "" is nil.
func (t *Tokenizer) Encode(text string) []int32 {
	t.mustBeOpen()
	var ids []int32
	for piece := range strings.SplitSeq(text, "\x00") {
		if piece == "" {
			continue
		}
		enc := t.hf.EncodeWithOptions(piece, false)
		for _, id := range enc.IDs {
			ids = append(ids, int32(id))
		}
	}
	return ids
}

// IndexLost returns the byte index in text of the first character that
// Encode loses, or -1 where it loses none. The native library fails a
// whole text that holds a character its model has no id for and no
// unknown token to give (a BPE model whose unk_token is not in its vocab,
// a Unigram model without unk_id), and Encode, which cannot tell that
// failure from no token, gives none for the whole piece (the text between
// NULs) that holds it: the character is the first of that piece, not
// white space, that gives no token on its own, else the piece's first
// that is not white space. A piece of white space alone that gives no
// token is none lost (a pre-tokenizer that splits on white space drops
// it). Tokenizers that give every character an id (byte-level BPE, one
// with an unknown token in its vocab) lose none, and are known to from
// tokenizer.json without encoding text.
func (t *Tokenizer) IndexLost(text string) int {
	t.mustBeOpen()
	if t.vocab.idForEveryCharacter {
		return -1
	}
	return t.indexLost(text)
}

// indexLost is IndexLost found by encoding text.
func (t *Tokenizer) indexLost(text string) int {
	start := 0
	for piece := range strings.SplitSeq(text, "\x00") {
		first := strings.IndexFunc(piece, func(r rune) bool { return !unicode.IsSpace(r) })
		if first >= 0 && len(t.hf.EncodeWithOptions(piece, false).IDs) == 0 {
			for i, r := range piece[first:] {
				if !unicode.IsSpace(r) && len(t.hf.EncodeWithOptions(string(r), false).IDs) == 0 {
					return start + first + i
				}
			}
			return start + first
		}
		start += len(piece) + 1
	}
	return -1
}

// Decode returns the text of ids, special tokens included. Ids outside
// [0, VocabSize()) are skipped. Bytes that do not form complete UTF-8
// characters become U+FFFD.
func (t *Tokenizer) Decode(ids []int32) string {
	return t.decode(ids, false)
}

// DecodeSkipSpecial is Decode without the special tokens (those marked
// "special" in added_tokens, such as <|im_end|>).
func (t *Tokenizer) DecodeSkipSpecial(ids []int32) string {
	return t.decode(ids, true)
}

func (t *Tokenizer) decode(ids []int32, skipSpecial bool) string {
	t.mustBeOpen()
	u := make([]uint32, 0, len(ids))
	for _, id := range ids {
		if id >= 0 && int(id) < t.vocab.size {
			u = append(u, uint32(id))
		}
	}
	if len(u) == 0 {
		return ""
	}
	s := t.hf.Decode(u, skipSpecial)
	if s != "" {
		return s
	}
	// The native library returns "" when the text holds a NUL byte, which
	// a C string cannot carry. Drop the tokens that decode to nothing on
	// their own (NUL bytes, empty tokens) and try again.
	kept := u[:0:0]
	for _, id := range u {
		if t.hf.Decode([]uint32{id}, skipSpecial) != "" {
			kept = append(kept, id)
		}
	}
	if len(kept) == 0 || len(kept) == len(u) {
		return ""
	}
	return t.hf.Decode(kept, skipSpecial)
}

// VocabSize is the number of ids the tokenizer can produce: one more than
// the largest id of the model vocabulary and the added tokens (Qwen3:
// 151,643 BPE tokens + 26 added tokens = 151,669).
func (t *Tokenizer) VocabSize() int { return t.vocab.size }

// TokenID returns the id of the token spelled s exactly as in
// tokenizer.json (for byte-level BPE that is the byte-level spelling, e.g.
// "Ġthe" for " the"), and whether there is one. Added tokens take
// precedence over the model vocabulary.
func (t *Tokenizer) TokenID(s string) (int32, bool) {
	id, ok := t.vocab.ids[s]
	return id, ok
}

// AddedTokens returns a copy of the added tokens (special or not), in the
// order of tokenizer.json.
func (t *Tokenizer) AddedTokens() []AddedToken {
	return append([]AddedToken(nil), t.vocab.added...)
}

// IMStart is the id of <|im_start|>, which opens a ChatML turn.
func (t *Tokenizer) IMStart() int32 { return t.imStart }

// IMEnd is the id of <|im_end|>, which closes a ChatML turn.
func (t *Tokenizer) IMEnd() int32 { return t.imEnd }

// EndOfText is the id of <|endoftext|>, the end-of-document token (Qwen's
// pad token), and whether the tokenizer has one (an added token).
func (t *Tokenizer) EndOfText() (int32, bool) { return t.eot, t.hasEOT }

// StopIDs returns the ids that end generation: <|im_end|> and, where the
// tokenizer has one, <|endoftext|>, in that order.
func (t *Tokenizer) StopIDs() []int32 {
	if !t.hasEOT {
		return []int32{t.imEnd}
	}
	return []int32{t.imEnd, t.eot}
}

// ChatTemplate returns the Jinja chat template that Load found
// (chat_template.jinja, else tokenizer_config.json's), else "". It is
// informational: RenderChat renders ChatML in Go, and EncodeChat writes
// the BOS token before it where the template writes {{ bos_token }}
// first, and after its generation prompt what the template's writes
// after "<|im_start|>assistant\n".
func (t *Tokenizer) ChatTemplate() string { return t.template }

// TemplateWarning says, naming the file, how EncodeChat's prompts differ
// from what the chat template renders where Load can tell: a template
// that writes bos_token elsewhere than once before the messages (in its
// message loop, under a condition), or whose generation prompt is not
// literal text beginning "<|im_start|>assistant\n" (a variable, a
// filter: literal text of another form is refused), or that writes a
// system turn of its own where the messages have none
// (Qwen2.5-Instruct's), each in turn, joined by "; ". "" otherwise.
func (t *Tokenizer) TemplateWarning() string { return t.templateWarning }
