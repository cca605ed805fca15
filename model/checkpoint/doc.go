// Package checkpoint saves and restores training state: the weights of a
// params.Store, the AdamW moments and a JSON state, written atomically.
//
// Layout of a run directory:
//
//	DIR/ckpt-000100/model.safetensors      weights, names = ONNX initializer names
//	DIR/ckpt-000100/optimizer.safetensors  "<name>.exp_avg", "<name>.exp_avg_sq"
//	DIR/ckpt-000100/state.json             State: version, steps, data cursor,
//	                                       config, size and CRC-32C of each file
//	DIR/latest                             "ckpt-000100\n" (for people and tools)
//
// The number is the trainer step (State.Step), zero-padded to six digits;
// larger numbers simply get more digits, and ordering always parses the
// number rather than sorting names.
//
// Atomicity: Save writes a checkpoint into a temporary directory
// (DIR/.tmp-ckpt-000100-*), fsyncs every file and the directory, renames it
// to its final name and fsyncs DIR; then it replaces DIR/latest by writing
// a temporary file, fsyncing it and renaming it over the old pointer. A
// crash at any point leaves either the old or the new checkpoint complete
// and a pointer naming a complete checkpoint. A Save of a step that has a
// checkpoint moves the old one aside (DIR/.tmp-old-ckpt-000100-*) before
// renaming the new one to its name; a crash between the two leaves the
// old one there, which Resume and the next Save put back. Stale temporary
// directories (and the pointer's temporary file) are removed by Resume
// and the next Save. One writer per DIR is assumed. A pointer that
// cannot be updated once the checkpoint is in place is a warning
// (Options.Warn) naming it and the error, not a failed Save: readers go
// by the checkpoint directories (below), and Save returns the new path.
//
// Retention (Options.Keep) runs after the pointer's update: it keeps the
// newest Keep checkpoints of steps up to the one saved and removes those
// of later steps, which only a resume that skipped them as damaged
// leaves (the writer resumes from its newest intact checkpoint). A
// checkpoint it cannot remove is a warning (Options.Warn), not a failed
// Save: the new checkpoint is saved.
//
// Integrity: state.json records the size and CRC-32C (Castagnoli) of both
// safetensors files; Load checks them, so truncation and bit flips inside
// tensor data are reported with the file's path, not loaded silently.
// state.json has no checksum of its own; its step and optimiser step
// count are checked against the copies Save writes in the safetensors
// metadata (spiral_step, spiral_optimizer_steps), and its data cursor and
// configuration against the CRC-32C of them that Save writes in
// model.safetensors' (spiral_state_crc32c), so that a flipped digit in
// the data position or a setting is damage, skipped, not a resume from
// another place or a settings difference. ReadCheckedState does that
// check of state.json (and of model.safetensors' size) without reading
// tensor data, for readers that go by a checkpoint's settings first.
// Before any data is read, both safetensors headers are checked against
// the Store and the optimiser, and every mismatch (missing, unexpected,
// wrong dtype, wrong shape) is listed in one error; the Store is then
// untouched. A checksum error is found only after the data has been read,
// so the Store then holds partly loaded values: load another checkpoint
// (Resume does) or start afresh.
//
// Readers go by the checkpoint directories, not the pointer: a crash
// between a checkpoint's rename and the pointer's update leaves the
// pointer one checkpoint behind. Resume loads the newest checkpoint (by
// step) that passes Load, falling back to older ones, and reports why
// each newer one was skipped (damage only: a checkpoint the system fails
// to read, EIO or EACCES, stops the search; Unreadable); Newest does the same with any load function
// (a store shaped by the checkpoint, graphs opened for its LoRA
// settings), and Pick with a path a user gave (one checkpoint, or a run's
// checkpoints/ directory). They may read while a run saves into DIR: a
// checkpoint that retention removes, or a Save replaces, while it is read
// is not reported as damaged; the search starts again from the newest.
// Save refuses weights holding a NaN or an infinity, so a run never
// writes (and retention never keeps in place of a good one) a
// non-finite checkpoint. Directories and files are created with the
// default permissions less the umask, like the rest of a run directory.
package checkpoint
