#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/metrics.h"
#include "server/store/elite_store.h"
#include "server/store/warm_start_persistence.h"
#include "tests/server/test_util.h"

namespace shardplan::server {
namespace {

using ::testing::HasSubstr;
using testing::MakeProblem;
using testing::Plans;
using testing::TempDir;

std::unique_ptr<EliteStore> OpenOrDie(const std::string& path, int top_k = 16) {
  EliteStore::Options options;
  options.path = path;
  options.top_k = top_k;
  absl::StatusOr<std::unique_ptr<EliteStore>> store = EliteStore::Open(options);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *std::move(store) : nullptr;
}

void ExecOrDie(sqlite3* db, const std::string& sql) {
  char* error = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
      << (error ? error : "") << " in " << sql;
}

TEST(ProblemKeyTest, FingerprintIsStableAndBucketed) {
  auto a = MakeProblem("llama-3.1-70b", 16, 2048, 512);
  auto same_bucket = MakeProblem("llama-3.1-70b", 16, 2000, 500);
  auto other_isl = MakeProblem("llama-3.1-70b", 16, 8192, 512);
  auto other_gpus = MakeProblem("llama-3.1-70b", 32, 2048, 512);
  ASSERT_TRUE(a.ok() && same_bucket.ok() && other_isl.ok() && other_gpus.ok());
  const ProblemKey key = MakeProblemKey(*a);
  EXPECT_EQ(key.fingerprint.size(), 16u);
  EXPECT_EQ(key.fingerprint, MakeProblemKey(*a).fingerprint);
  EXPECT_EQ(key.fingerprint, MakeProblemKey(*same_bucket).fingerprint);
  EXPECT_NE(key.fingerprint, MakeProblemKey(*other_isl).fingerprint);
  EXPECT_EQ(key.family_key, MakeProblemKey(*other_isl).family_key);
  EXPECT_NE(key.family_key, MakeProblemKey(*other_gpus).family_key);
  EXPECT_EQ(key.input_tokens_log2, 11);
  EXPECT_EQ(key.output_tokens_log2, 9);

  simulator::Problem renamed = *a;
  renamed.model.name = "my-llama";
  EXPECT_EQ(MakeProblemKey(renamed).fingerprint, key.fingerprint)
      << "name is not hashed";
  simulator::Problem deeper = *a;
  deeper.model.layers += 1;
  EXPECT_NE(MakeProblemKey(deeper).fingerprint, key.fingerprint);
}

TEST(ProblemKeyTest, CalibrationProfileIsPartOfTheKey) {
  auto a = MakeProblem("llama-3.1-70b", 16, 2048, 512);
  ASSERT_TRUE(a.ok());
  const ProblemKey agnostic = MakeProblemKey(*a);
  EXPECT_EQ(agnostic.model_name, "llama-3.1-70b");
  // Engine-agnostic keys have no profile suffix: rows stored before profiles
  // existed stay exact matches.
  EXPECT_EQ(ProfileOfKey(agnostic), "h100-engine-agnostic");
  // TensorRT-LLM shares the engine-agnostic profile's constants but not its
  // disaggregated request overhead: another problem.
  simulator::Problem trtllm = *a;
  trtllm.workload.engine = "trtllm";
  trtllm.workload.calibration_profile = "h100-trtllm";
  EXPECT_NE(MakeProblemKey(trtllm).fingerprint, agnostic.fingerprint);
  EXPECT_EQ(MakeProblemKey(trtllm).model_name,
            "llama-3.1-70b @profile=h100-trtllm");
  EXPECT_EQ(ProfileOfKey(MakeProblemKey(trtllm)), "h100-trtllm");
  simulator::Problem vllm = *a;
  vllm.workload.engine = "vllm";
  vllm.workload.calibration_profile = "h100-vllm";
  const ProblemKey vllm_key = MakeProblemKey(vllm);
  EXPECT_NE(vllm_key.fingerprint, agnostic.fingerprint);
  EXPECT_EQ(vllm_key.family_key, agnostic.family_key);
  EXPECT_EQ(vllm_key.model_name, "llama-3.1-70b @profile=h100-vllm");
  EXPECT_EQ(ProfileOfKey(vllm_key), "h100-vllm");
  // Nearest lookups prefer the same profile, but another one is close.
  EXPECT_DOUBLE_EQ(WorkloadDistance(vllm_key, agnostic), 1);
}

TEST(ProblemKeyTest, WorkloadDistance) {
  ProblemKey a, b;
  a.input_tokens_log2 = 11;
  b.input_tokens_log2 = 13;
  a.output_tokens_log2 = b.output_tokens_log2 = 9;
  a.weight_dtype = b.weight_dtype = "bf16";
  a.kv_cache_dtype = "bf16";
  b.kv_cache_dtype = "fp8";
  EXPECT_DOUBLE_EQ(WorkloadDistance(a, b), 2 + 2);
  b.model_key = "other";
  EXPECT_DOUBLE_EQ(WorkloadDistance(a, b), 2 + 2 + 8);
  EXPECT_DOUBLE_EQ(WorkloadDistance(a, a), 0);
}

// Round trip, top-K and nearest-problem lookups are in the backend conformance
// suite (tests/server/store_conformance_test.cc), which runs them on SQLite and
// PostgreSQL; this file keeps what only SQLite has (file migration, a full
// disk).

TEST(EliteStoreTest, MigratesAVersionOneStore) {
  TempDir dir;
  const std::string path = dir.File("v1.db");
  auto problem = MakeProblem("llama-3.1-8b", 8);
  ASSERT_TRUE(problem.ok());
  const ProblemKey key = MakeProblemKey(*problem);
  {
    // A store as version 1 of the schema left it.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ExecOrDie(
        db,
        "CREATE TABLE schema_version (version INTEGER NOT NULL);"
        "INSERT INTO schema_version VALUES (1);"
        "CREATE TABLE problems (fingerprint TEXT PRIMARY KEY, family_key TEXT "
        "NOT NULL,"
        " model_key TEXT NOT NULL, model_name TEXT NOT NULL, input_tokens_log2 "
        "INTEGER "
        "NOT NULL, output_tokens_log2 INTEGER NOT NULL, concurrency_bucket "
        "INTEGER NOT "
        "NULL, ttft_bucket INTEGER NOT NULL, tpot_bucket INTEGER NOT NULL, "
        "weight_dtype "
        "TEXT NOT NULL, kv_cache_dtype TEXT NOT NULL, cost_model_version "
        "INTEGER NOT "
        "NULL, searches INTEGER NOT NULL DEFAULT 0, updated_at_ms INTEGER NOT "
        "NULL);"
        "CREATE TABLE plans (fingerprint TEXT NOT NULL REFERENCES "
        "problems(fingerprint), plan_json TEXT NOT NULL, reward REAL NOT NULL, "
        "prediction_json TEXT NOT NULL, PRIMARY KEY (fingerprint, plan_json));"
        "CREATE TABLE policy_weights (family_key TEXT PRIMARY KEY, weights "
        "BLOB NOT "
        "NULL, updated_at_ms INTEGER NOT NULL);");
    ExecOrDie(db, "INSERT INTO problems VALUES ('" + key.fingerprint + "', '" +
                      key.family_key + "', '" + key.model_key +
                      "', 'llama-3.1-8b', 11, 9, 0, 0, 0, 'bf16', "
                      "'bf16', " +
                      std::to_string(key.cost_model_version) +
                      ", 1, 1);"
                      "INSERT INTO plans VALUES ('" +
                      key.fingerprint +
                      "', '{\"dp\":2,\"tp\":4,\"pp\":1}', 0.5, '{}');");
    sqlite3_close(db);
  }
  auto store = OpenOrDie(path);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(testing::SqliteSchemaVersion(path), EliteStore::kSchemaVersion);
  auto found = store->Lookup(key);
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_TRUE(found->has_value());
  ASSERT_EQ((*found)->plans.size(), 1u);
  EXPECT_EQ((*found)->plans[0].plan.tp, 4);
  EXPECT_EQ((*found)->plans[0].plan.dp, 2);
  EXPECT_DOUBLE_EQ((*found)->plans[0].output_tokens_per_s, 0)
      << "new column's default";
  // And the migrated store takes new writes.
  EXPECT_TRUE(store->Record(key, *problem, Plans(2), "").ok());
}

// One problems row that no longer decodes is skipped; the store stays on and
// the family's other problems still answer.
TEST(EliteStoreTest, AnUnreadableProblemsRowIsSkipped) {
  TempDir dir;
  EliteStore::Options options;
  options.path = dir.File("store.db");
  auto store = EliteStore::Open(options);
  ASSERT_TRUE(store.ok()) << store.status();
  auto p1024 = MakeProblem("llama-3.1-8b", 8, 1024, 512);
  auto p8192 = MakeProblem("llama-3.1-8b", 8, 8192, 512);
  auto p2048 = MakeProblem("llama-3.1-8b", 8, 2048, 512);
  ASSERT_TRUE(p1024.ok() && p8192.ok() && p2048.ok());
  ASSERT_TRUE(
      (*store)->Record(MakeProblemKey(*p1024), *p1024, Plans(1), "").ok());
  ASSERT_TRUE(
      (*store)->Record(MakeProblemKey(*p8192), *p8192, Plans(2), "").ok());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(options.path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "UPDATE problems SET input_tokens_log2 = 'abc' WHERE "
                         "input_tokens_log2 = 10",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto found = (*store)->Lookup(MakeProblemKey(*p2048));
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->fingerprint, MakeProblemKey(*p8192).fingerprint);
  // The damaged problem itself: its exact row is unreadable, so the nearest.
  auto damaged = (*store)->Lookup(MakeProblemKey(*p1024));
  ASSERT_TRUE(damaged.ok()) << damaged.status();
  EXPECT_FALSE((*damaged)->exact);
  EXPECT_TRUE(
      (*store)->Record(MakeProblemKey(*p2048), *p2048, Plans(1), "").ok());
}

// The warm-start lookup at 100,000 problems of one family (the store's
// bound is --store_max_problems, 10,000 by default): the exact problem is
// found by its key; a nearest lookup reads the family. Figures in
// docs/reliability.md; the bounds here are 20x what the dev machine measures.
TEST(EliteStoreTest, LookupAtOneHundredThousandProblems) {
  TempDir dir;
  EliteStore::Options options;
  options.path = dir.File("store.db");
  options.max_problems = 0;
  auto store = EliteStore::Open(options);
  ASSERT_TRUE(store.ok()) << store.status();
  auto problem = MakeProblem("llama-3.1-8b", 8, 1024, 512);
  ASSERT_TRUE(problem.ok());
  const ProblemKey key = MakeProblemKey(*problem);
  ASSERT_TRUE((*store)->Record(key, *problem, Plans(4), "").ok());
  // 100,000 more problems of the same family, each with one plan, straight
  // into the file (Record would take minutes with a sync per commit).
  constexpr int kProblems = 100000;
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(options.path.c_str(), &db), SQLITE_OK);
    const std::string sql = absl::StrCat(
        "BEGIN; WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM "
        "n WHERE i < ",
        kProblems,
        ") INSERT INTO problems SELECT printf('%016x', i), family_key, "
        "model_key, model_name, 20 + i % 7, output_tokens_log2, i % 9, "
        "ttft_bucket, tpot_bucket, weight_dtype, kv_cache_dtype, "
        "cost_model_version, 1, i FROM n, (SELECT * FROM problems LIMIT 1); "
        "INSERT INTO plans SELECT p.fingerprint, q.plan_json, q.reward, "
        "q.prediction_json, q.output_tokens_per_s FROM problems p, (SELECT * "
        "FROM plans LIMIT 1) q WHERE p.fingerprint <> q.fingerprint; COMMIT;");
    char* error = nullptr;
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error),
              SQLITE_OK)
        << (error != nullptr ? error : "");
    sqlite3_close(db);
  }
  absl::Time start = absl::Now();
  auto exact = (*store)->Lookup(key);
  const absl::Duration exact_time = absl::Now() - start;
  ASSERT_TRUE(exact.ok() && exact->has_value()) << exact.status();
  EXPECT_TRUE((*exact)->exact);
  auto other = MakeProblem("llama-3.1-8b", 8, 4096, 512);
  ASSERT_TRUE(other.ok());
  start = absl::Now();
  auto nearest = (*store)->Lookup(MakeProblemKey(*other));
  const absl::Duration nearest_time = absl::Now() - start;
  ASSERT_TRUE(nearest.ok() && nearest->has_value()) << nearest.status();
  EXPECT_FALSE((*nearest)->exact);
  std::printf("lookup at %d problems: exact %.2f ms, nearest %.1f ms\n",
              kProblems + 1, absl::ToDoubleMilliseconds(exact_time),
              absl::ToDoubleMilliseconds(nearest_time));
  EXPECT_LT(exact_time, absl::Milliseconds(100));
  EXPECT_LT(nearest_time, absl::Seconds(10));
  // Pruning to the default cap removes 90,001 problems and their plans.
  EliteStore::Options capped = options;
  capped.max_problems = 10000;
  auto pruning = EliteStore::Open(capped);
  ASSERT_TRUE(pruning.ok());
  start = absl::Now();
  ASSERT_TRUE((*pruning)->Prune().ok());
  std::printf("prune 100001 -> 10000 problems: %.0f ms\n",
              absl::ToDoubleMilliseconds(absl::Now() - start));
  EXPECT_EQ(*(*pruning)->CountPlans(), 10000 + 3);  // key's 4 plans kept
}

TEST(EliteStoreTest, UnopenablePathsFail) {
  TempDir dir;
  // A path below a regular file cannot be created, even by root.
  const std::string file = dir.File("plain-file");
  std::ofstream(file) << "x";
  EliteStore::Options options;
  options.path = file + "/store.db";
  EXPECT_FALSE(EliteStore::Open(options).ok());

  // A file that is not a database.
  const std::string garbage = dir.File("garbage.db");
  std::ofstream(garbage) << std::string(8192, 'z');
  options.path = garbage;
  EXPECT_FALSE(EliteStore::Open(options).ok());

  if (geteuid() != 0) {  // root ignores directory permissions
    const std::string ro = dir.File("ro");
    ASSERT_EQ(mkdir(ro.c_str(), 0555), 0);
    options.path = ro + "/store.db";
    EXPECT_FALSE(EliteStore::Open(options).ok());
  }
}

TEST(WarmStartPersistenceTest, NoStoreMeansWarmStartDisabled) {
  ServerMetrics metrics(1, {"random"});
  WarmStartPersistence history(nullptr, metrics);
  EXPECT_FALSE(history.enabled());
  auto problem = MakeProblem("llama-3.1-8b", 8);
  ASSERT_TRUE(problem.ok());
  WarmStartPersistence::Found found =
      history.Find(MakeProblemKey(*problem), /*wanted=*/true);
  EXPECT_EQ(found.result, kWarmStartDisabled);
  EXPECT_FALSE(found.warm_start.has_value());
  history.Record(MakeProblemKey(*problem), *problem, Plans(1),
                 "");  // a no-op, no crash
}

TEST(WarmStartPersistenceTest, HitsAndMisses) {
  TempDir dir;
  ServerMetrics metrics(1, {"random"});
  WarmStartPersistence history(OpenOrDie(dir.File("store.db")), metrics);
  auto p2048 = MakeProblem("llama-3.1-8b", 8, 2048, 512);
  auto p4096 = MakeProblem("llama-3.1-8b", 8, 4096, 512);
  ASSERT_TRUE(p2048.ok() && p4096.ok());
  EXPECT_EQ(history.Find(MakeProblemKey(*p2048), true).result, kWarmStartMiss);
  history.Record(MakeProblemKey(*p2048), *p2048, Plans(3), "w");
  EXPECT_DOUBLE_EQ(metrics.elite_store_plans().Value(), 3);
  WarmStartPersistence::Found exact =
      history.Find(MakeProblemKey(*p2048), true);
  EXPECT_EQ(exact.result, kWarmStartHitExact);
  ASSERT_TRUE(exact.warm_start.has_value());
  EXPECT_EQ(exact.warm_start->source, "exact");
  EXPECT_EQ(exact.warm_start->elite_plans.size(), 3u);
  EXPECT_EQ(exact.warm_start->policy_weights, "w");
  WarmStartPersistence::Found nearest =
      history.Find(MakeProblemKey(*p4096), true);
  EXPECT_EQ(nearest.result, kWarmStartHitNearest);
  ASSERT_TRUE(nearest.warm_start.has_value());
  EXPECT_EQ(nearest.warm_start->source,
            "nearest:" + MakeProblemKey(*p2048).fingerprint);
  EXPECT_EQ(history.Find(MakeProblemKey(*p2048), /*wanted=*/false).result,
            kWarmStartDisabled);
}

TEST(WarmStartPersistenceTest, AFullDiskTurnsWarmStartsOff) {
  TempDir dir;
  ServerMetrics metrics(1, {"random"});
  EliteStore::Options options;
  options.path = dir.File("small.db");
  ASSERT_NE(OpenOrDie(options.path), nullptr);  // schema created, store closed
  options.max_page_count =
      20;  // ~80 KB: the big write below fails with SQLITE_FULL
  absl::StatusOr<std::unique_ptr<EliteStore>> store = EliteStore::Open(options);
  ASSERT_TRUE(store.ok()) << store.status();
  WarmStartPersistence history(*std::move(store), metrics);
  ASSERT_TRUE(history.enabled());
  auto problem = MakeProblem("llama-3.1-8b", 8);
  ASSERT_TRUE(problem.ok());
  std::vector<StoredPlan> plans = Plans(4);
  for (StoredPlan& plan : plans) plan.prediction_json = std::string(20000, 'p');
  history.Record(MakeProblemKey(*problem), *problem, plans,
                 std::string(100000, 'w'));
  EXPECT_FALSE(history.enabled());
  EXPECT_EQ(history.Find(MakeProblemKey(*problem), true).result,
            kWarmStartDisabled);
}

}  // namespace
}  // namespace shardplan::server
