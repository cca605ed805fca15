package tokenizer

// LibraryVersion is the version of github.com/daulet/tokenizers and of the
// libtokenizers.a that scripts/setup.sh builds from that module's source.
// The module's cgo preamble references the symbol tokenizers_version_1_22_1,
// so a binary linked against a library of another tag fails to link; keep
// this constant in step with go.mod.
const LibraryVersion = "1.22.1"
