// Package data loads math problem sets, shuffles them reproducibly, renders
// the prompt templates, and (in sub-package synth) generates the embedded
// synthetic arithmetic task.
//
// # Loading
//
// [Load] reads JSONL, JSON (an array of rows, an object of rows keyed by id,
// or an object holding one array of rows such as {"data": [...]}; one
// holding several, a file of splits such as {"train": [...], "test":
// [...]}, is refused naming them, with the jq command that takes one out)
// and Parquet; a compressed file (gzip, zstd, bzip2, xz, zip) is refused,
// naming its compression, and so is UTF-16 text (read as UTF-8 it would
// be malformed at line 1), and a Parquet file named or given as JSON
// text, or JSON text as Parquet, naming the format it holds. A pipe or
// a device (a shell's process substitution, <(zcat rows.jsonl.gz)) is
// read whole into memory, as none can be read at an offset, once its
// first bytes pass the checks a file's do, and, with its format named
// or found, hold no NUL byte or byte that is not UTF-8 in JSON text and
// open Parquet with its magic bytes. A JSONL line may start with a UTF-8 byte order
// mark, as every line that starts a file joined from files that each
// have one does (cat a.jsonl b.jsonl); it is dropped. Every row is first turned into plain Go values
// (maps, slices, strings, numbers), so the same field mapping and
// validation apply to every format:
//
//   - The problem comes from the field named by [LoadOptions.ProblemField], or
//     the first of [ProblemFields] present in the first row (exact name
//     first, then case-insensitive and past a byte order mark that a
//     CSV converter kept in the first column's name). A list of chat messages
//     ([{role, content}, ...], as in verl parquet files) yields the content of
//     its last user message. A known instruction suffix such as "Please
//     reason step by step, and put your final answer within \boxed{}." is cut
//     from the end (see [InstructionSuffixes]), because the search template
//     adds its own.
//   - A problem or answer field detected in the first row is read in
//     every row: a later row without it that holds another detection
//     knows is an error naming both; one that holds it beside one
//     detection takes first is read by it and counted
//     ([Dataset.OtherFields]).
//   - The gold answer comes from [LoadOptions.AnswerField], or the first of
//     [AnswerFields] present, looked up at the top level and then one level
//     down (reward_model.ground_truth). Dotted paths name nested fields.
//     A field read as both the problem and the gold answer is an error.
//     A JSON number that is an integer of up to 16 digits, by its digits,
//     loses its fraction and exponent (27.0 -> "27", 1e3 -> "1000"; not
//     0.99999999999999999), any other stays as written; Parquet numbers
//     take their shortest decimal form (a FLOAT 0.1 -> "0.1", a DECIMAL
//     1.50 -> "1.5"); a NaN, a missing number, is skipped as a null is. A Parquet column (at the top level or in a struct)
//     of a logical type that the reader does not give as its value (DATE,
//     TIME, TIMESTAMP, FLOAT16, UUID, ...) is an error where it is used,
//     never a day count or raw bytes taken for an answer. A worked
//     solution yields the content of its last \boxed{} (see [LastBoxed]),
//     or the text after a final "####" marker (GSM8K); fields that are
//     worked solutions by name ([SolutionFields]) must contain one of the
//     two.
//   - The id comes from [LoadOptions.IDField], which every row must hold,
//     or the first of [IDFields] present in the first row that holds one
//     (an object of rows keyed by id takes its keys, unless IDField is
//     "-"); a row without it,
//     before that row or after, is numbered: "<file name>:<record number>".
//   - Malformed rows (one that repeats a key among its own, or a field
//     read whose objects repeat one, a chat message's "content" or a
//     nested answer's key: which value is meant is ambiguous; a repeat in
//     a field spiral does not read, such as a row's metadata, is left
//     alone), missing fields, wrong types and bytes that
//     are not UTF-8 (a Latin-1 file; never read as U+FFFD) are errors that
//     name the file, the line (JSONL, and a JSON document's malformed
//     text) or row (JSON, Parquet), and the field. Empty or null problems,
//     empty, null or NaN answers, duplicate problems and rows over the caps (MaxProblemBytes,
//     MaxAnswerBytes) are skipped and reported by [Dataset.Skipped]; they
//     are never silently kept or dropped. A gold answer whose braces do
//     not balance is kept and counted ([Dataset.UnbalancedAnswers]).
//
// Problem.Source is "path:LINE" for JSONL (1-based line), "path:row N" for
// Parquet (0-based row), and for a JSON document the row followed by the
// line it starts on, which a pretty-printed file spreads a row over many
// of: "path:row N (line L)" for an array, `path:row "KEY" (line L)` for
// an object of rows and "path:FIELD row N (line L)" for an object holding
// an array of rows. Error messages and skipped rows use the same
// locations. A Parquet file with an LZ4_RAW-compressed column (pyarrow's
// compression="lz4") is refused before any row is read, naming the
// column: parquet-go v0.32.0 decodes a page of it that compresses less
// than 3:1 wrongly (its issue #608), and runs out of memory on a corrupt
// one. The footer's length and every page header are checked before
// any row is read: a page that runs past its column chunk, declares more
// bytes uncompressed than its whole chunk, or holds a ZSTD frame or
// Snappy block declaring more than its page is corrupt data, an error
// naming the column, row group and byte, rather than an allocation of
// what it declares (up to 64 GiB); so is a DECIMAL column whose precision
// is not 1 to 1,000 digits or whose scale is not 0 to its precision.
//
// # Shuffling
//
// [Stream] visits a dataset in epochs; epoch e is the permutation drawn
// from a PCG generator seeded with (seed, e), so a saved [Cursor] (seed,
// epoch, position) restores the exact same sequence.
//
// # Templates
//
// [Templates] holds the search and aggregation prompts as text/template
// sources; the defaults are embedded from templates/*.txt and either can be
// replaced by a file.
package data
