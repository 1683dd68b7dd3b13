// save_model_state / load_model_state / read_model_state_ids: a model's state in a file with the
// token ids that made it; a restored model goes on bitwise; errors name the file.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "headway/tools/state_file.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/tiny_model.hpp"

namespace headway {
namespace {

std::unique_ptr<test::TinyModel> make(test::TinyWeights& w, const PlanOptions& o = {}) {
  auto m = std::make_unique<test::TinyModel>();
  const Status s = m->init(w, o, nullptr);
  REQUIRE_MESSAGE(s.ok(), s.message());
  return m;
}

void write_bytes(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

TEST_CASE("state file: saved with its ids, read back, restored: the next logits are bitwise the same") {
  test::TempDir dir("state_file");
  test::TinyWeights w(test::tiny_model_config(true), 5);
  auto a = make(w);
  auto b = make(w);
  const std::vector<int32_t> ids = test::tiny_prompt(9, 2);
  REQUIRE(a->model.prefill(ids.data(), 9).ok());
  const std::string path = dir / "prompt.cache";
  Status s = save_model_state(a->model, path.c_str(), ids.data(), 9);
  REQUIRE_MESSAGE(s.ok(), s.message());
  CHECK(test::slurp(path).size() == a->model.state_bytes() + 9 * 4 + 8);
  const Result<std::vector<int32_t>> stored = read_model_state_ids(path.c_str());
  REQUIRE(stored.ok());
  CHECK(stored.value() == ids);
  std::vector<int32_t> loaded_ids;
  s = load_model_state(b->model, path.c_str(), &loaded_ids);
  REQUIRE_MESSAGE(s.ok(), s.message());
  CHECK(loaded_ids == ids);
  CHECK(b->model.position() == 9);
  REQUIRE(a->model.decode(17).ok());
  REQUIRE(b->model.decode(17).ok());
  CHECK(std::memcmp(a->model.logits(), b->model.logits(), 50 * sizeof(float)) == 0);

  // Without ids: an empty list; saved again over the same path.
  REQUIRE(save_model_state(a->model, path.c_str()).ok());
  CHECK(read_model_state_ids(path.c_str()).value().empty());
  REQUIRE(load_model_state(b->model, path.c_str(), &loaded_ids).ok());
  CHECK(loaded_ids.empty());
  CHECK(b->model.position() == 10);
}

TEST_CASE("state file: a missing, foreign, truncated or other plan's file is refused naming it") {
  test::TempDir dir("state_file");
  test::TinyWeights w(test::tiny_model_config(true), 5);
  auto m = make(w);
  const std::vector<int32_t> ids = test::tiny_prompt(6, 3);
  REQUIRE(m->model.prefill(ids.data(), 6).ok());
  const std::string good = dir / "good.cache";
  REQUIRE(save_model_state(m->model, good.c_str(), ids.data(), 6).ok());
  const std::string bytes = test::slurp(good);

  const std::string missing = dir / "missing.cache";
  Result<std::vector<int32_t>> r = read_model_state_ids(missing.c_str());
  CHECK(r.status().code() == Code::kNotFound);
  CHECK(std::string(r.status().message()) == "cannot open " + missing + ": No such file or directory");
  Status s = load_model_state(m->model, missing.c_str());
  CHECK(s.code() == Code::kNotFound);

  const std::string foreign = dir / "foreign.cache";
  write_bytes(foreign, "not a state at all");
  r = read_model_state_ids(foreign.c_str());
  CHECK(std::string(r.status().message()) == foreign + ": not a headway state file (it does not end with \"HWID\")");
  write_bytes(foreign, "abc");
  CHECK(std::string(load_model_state(m->model, foreign.c_str()).message()) ==
        foreign + ": 3 bytes, too short for a headway state file (truncated)");

  const std::string cut = dir / "cut.cache";
  std::string cut_bytes = bytes;
  cut_bytes.erase(100, 4);  // a torn state, the trailer intact
  write_bytes(cut, cut_bytes);
  s = load_model_state(m->model, cut.c_str());
  CHECK(s.code() == Code::kDataLoss);
  CHECK(std::string(s.message()).rfind(cut + ": state: ", 0) == 0);

  std::string many = bytes;
  const uint32_t huge = 1000;
  many.replace(many.size() - 8, 4, reinterpret_cast<const char*>(&huge), 4);
  write_bytes(cut, many);
  CHECK(std::string(read_model_state_ids(cut.c_str()).status().message()) ==
        cut + ": 1000 token ids do not fit in its " + std::to_string(many.size()) + " bytes (truncated)");

  Config c = test::tiny_model_config(true);
  c.kv_dtype = DType::kF16;
  test::TinyWeights w16(c, 5);
  auto other = make(w16);
  s = load_model_state(other->model, good.c_str());
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(std::string(s.message()) == good + ": state: kv_dtype f32, this plan's f16");
  CHECK(other->model.position() == 0);

  s = save_model_state(m->model, good.c_str(), ids.data(), 5);
  CHECK(std::string(s.message()) == good + ": 5 token ids for a state at position 6");
  const std::string nowhere = dir / "no/such/dir.cache";
  s = save_model_state(m->model, nowhere.c_str());
  CHECK(std::string(s.message()) == "cannot write " + nowhere + ".tmp: No such file or directory");
  CHECK(test::slurp(good) == bytes);  // the refused saves left the file as it was
}

}  // namespace
}  // namespace headway
