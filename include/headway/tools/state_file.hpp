// A model's state in a file (hosted tools layer, headway::tools): Model::save_state's bytes
// written to disk and read back, so a device prefills a long system prompt once (a prompt cache).
//
//   file = the state (headway/model.hpp: its header, KV rows, logits, checksum)
//          ids [n] i32       the token ids the state holds, when the saver gave them (n 0: none)
//          n u32, "HWID"     the trailer: the ids are found from the file's end, the state is the rest
//
// Writing goes to PATH.tmp, then renames it over PATH: a reader sees the old file or the new one,
// never half of one. Errors name the file: "cache.bin: state: kv_dtype q8_0, this plan's f16".
#pragma once

#include <cstdint>
#include <vector>

#include "headway/model.hpp"
#include "headway/status.hpp"

namespace headway {

// Saves `model`'s state to `path`, with `ids` [n_ids] after it (the tokens that made the state:
// n_ids 0, or exactly model.position()).
Status save_model_state(const Model& model, const char* path, const int32_t* ids = nullptr, uint32_t n_ids = 0);

// Restores the state `path` holds into `model` (Model::load_state: every check before any
// write; on error the model is unchanged). `ids`, when not null, gets the ids stored with it.
Status load_model_state(Model& model, const char* path, std::vector<int32_t>* ids = nullptr);

// The ids a state file holds, read from its trailer alone (not the state): whether a cache
// matches a prompt is known before the state is read. kNotFound naming the file when it does
// not exist.
Result<std::vector<int32_t>> read_model_state_ids(const char* path);

}  // namespace headway
