// The multi-head latent attention stack of tiny_mla.hpp on the Cortex-M, checked against the
// double reference (mla_run.cc).
#pragma once

namespace tiny_mla {

// Runs the stack (two prefill chunks, then single-token decodes), prints what it ran and how close
// it came to the reference (with its instruction counts when `counting`: qemu -icount), and returns
// whether every output row is within tolerance and the spec string plans what the Config plans.
// session_storage: sizeof(headway::Session) bytes aligned for one, free for a new Session (main.cc
// passes its own Session's, done by then: a Session holds kMaxLayers layer objects inline, about
// 460 KiB, so the firmware keeps one such block, not two).
bool run(bool counting, void* session_storage);

}  // namespace tiny_mla
