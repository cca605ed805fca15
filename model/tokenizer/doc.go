// Package tokenizer turns text into token ids and back for spiral's models,
// renders chat prompts with the ChatML template that Qwen uses, and
// generates Hugging Face tokenizer.json files for small vocabularies.
//
// Conventions:
//
//   - Token ids are int32, as in the ONNX graphs' input_ids (widened to
//     int64 by the caller). Valid ids are 0 <= id < VocabSize(); a model's
//     logits may be wider (Qwen3: 151,936 logits for 151,669 ids) and ids
//     at or past VocabSize must not be sampled; Encode never produces them
//     and Decode skips them.
//   - Encode adds no special tokens (no BOS, no EOS, no post-processor
//     template), but special tokens written in the text, such as
//     "<|im_start|>", are recognised as their single ids. That is how
//     RenderChat's output becomes a prompt (EncodeChat's, with the
//     BOS token first where the chat template writes {{ bos_token }}
//     before its messages, and after the generation prompt what the
//     template's writes after "<|im_start|>assistant\n").
//   - Decode keeps special tokens in the text. Text decoded from ids is
//     always valid UTF-8: bytes that do not form a complete character
//     become U+FFFD, as in Hugging Face tokenizers. StreamDecoder holds such
//     bytes back until the character is complete.
//   - NUL (U+0000) cannot cross the native library's C-string boundary:
//     Encode drops NUL characters from its input, and Decode drops tokens
//     whose text is a NUL byte.
//   - A text holding a character that the model has no id for and no
//     unknown token to give (a BPE model whose unk_token is not in its
//     vocab, a Unigram model without unk_id) fails the native library,
//     whose error the binding drops: Encode gives no token for that text
//     (the piece between NULs), and IndexLost finds the character, for
//     callers to refuse it.
//   - The backend is github.com/daulet/tokenizers (the Rust Hugging Face
//     tokenizers library through cgo); the JSON is first validated with
//     encoding/json so that bad files give errors naming the file and the
//     problem rather than a crash inside the native library.
//
// A Tokenizer is safe for concurrent use by several goroutines, except
// Close, which must be called once when no other call is in flight.
package tokenizer
