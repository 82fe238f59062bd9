// One conformance suite over the EliteStore interface, run against both
// backends (SQLite file, PostgreSQL database on a real throwaway server started
// by the test): round trip, top-K, nearest problem, concurrent writers from
// separate connections, a newer schema refused, calibration profiles. Then
// PostgreSQL-only tests: the database going away and coming back (the store
// fails fast while it is down, then reconnects by itself). PostgreSQL tests
// are skipped only when the server binaries are not installed
// (scripts/install-deps installs them).
#include <sqlite3.h>

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pqxx/pqxx"
#include "server/metrics.h"
#include "server/store/elite_store.h"
#include "server/store/postgres_store.h"
#include "server/store/warm_start_persistence.h"
#include "tests/e2e/postgres_instance.h"
#include "tests/server/test_util.h"

namespace shardplan::server {
namespace {

using ::testing::HasSubstr;
using testing::MakeProblem;
using testing::Plans;
using testing::TempDir;
using testing_pg::PostgresInstance;

// The one PostgreSQL server of this test process (started on first use,
// stopped and removed at exit).
PostgresInstance* SharedPostgres(std::string* error) {
  static PostgresInstance* instance = [] {
    auto* pg = new PostgresInstance();
    return pg;
  }();
  static std::string init_error;
  static bool initialised = false;
  static bool ok = false;
  if (!instance->available()) {
    *error =
        "PostgreSQL server binaries not installed (initdb/pg_ctl under "
        "/usr/lib/postgresql/*/bin); run scripts/install-deps";
    return nullptr;
  }
  if (!initialised) {
    initialised = true;
    ok = instance->Init(&init_error);
    // Stopped and removed when the test process exits normally.
    atexit([] { delete instance; });
  }
  if (!ok) {
    *error = init_error;
    return nullptr;
  }
  return instance;
}

std::string FreshDatabase(PostgresInstance& pg) {
  static int counter = 0;
  const std::string name = absl::StrCat("t", getpid(), "_", ++counter);
  EXPECT_TRUE(pg.CreateDatabase(name)) << name;
  return pg.Url(name);
}

// A backend of the suite: Prepare makes an empty store location; the schema
// hooks read and overwrite its schema_version behind the store's back.
struct SqliteBackend {
  static constexpr const char* kName = "sqlite";
  std::unique_ptr<TempDir> dir;
  std::string location;
  bool Prepare(std::string*) {
    dir = std::make_unique<TempDir>();
    location = dir->File("store.db");
    return true;
  }
  int SchemaVersion() const { return testing::SqliteSchemaVersion(location); }
  void SetSchemaVersion(int version) const {
    sqlite3* db = nullptr;
    sqlite3_open(location.c_str(), &db);
    const std::string sql =
        absl::StrCat("UPDATE schema_version SET version = ", version);
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
};

struct PostgresBackend {
  static constexpr const char* kName = "postgres";
  std::string location;
  bool Prepare(std::string* why) {
    PostgresInstance* pg = SharedPostgres(why);
    if (pg == nullptr) return false;
    location = FreshDatabase(*pg);
    return true;
  }
  int SchemaVersion() const {
    pqxx::connection conn(location);
    pqxx::work txn(conn);
    return txn.exec1("SELECT MAX(version) FROM schema_version")[0].as<int>();
  }
  void SetSchemaVersion(int version) const {
    pqxx::connection conn(location);
    pqxx::work txn(conn);
    txn.exec(absl::StrCat("UPDATE schema_version SET version = ", version));
    txn.commit();
  }
};

template <typename Backend>
class EliteStoreConformanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!backend_.Prepare(&why)) {
      if (!PostgresInstance().available()) GTEST_SKIP() << why;
      FAIL() << why;
    }
  }
  std::unique_ptr<EliteStore> Open(int top_k = 16) {
    EliteStore::Options options;
    options.top_k = top_k;
    return Open(options);
  }
  std::unique_ptr<EliteStore> Open(EliteStore::Options options) {
    options.path = backend_.location;
    absl::StatusOr<std::unique_ptr<EliteStore>> store =
        EliteStore::Open(options);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }
  Backend backend_;
};

using Backends = ::testing::Types<SqliteBackend, PostgresBackend>;
class BackendNames {
 public:
  template <typename T>
  static std::string GetName(int) {
    return T::kName;
  }
};
TYPED_TEST_SUITE(EliteStoreConformanceTest, Backends, BackendNames);

TYPED_TEST(EliteStoreConformanceTest, RoundTripKeepsPlansBestFirstAndDurable) {
  auto problem = MakeProblem("llama-3.1-8b", 8);
  ASSERT_TRUE(problem.ok()) << problem.status();
  const ProblemKey key = MakeProblemKey(*problem);
  const std::vector<StoredPlan> plans = Plans(3);
  const std::string weights("w\0\x01\xff-binary", 12);  // bytes, not text
  {
    auto store = this->Open();
    ASSERT_NE(store, nullptr);
    EXPECT_FALSE(store->Lookup(key)->has_value());
    ASSERT_TRUE(store->Record(key, *problem, plans, weights).ok());
    EXPECT_EQ(*store->CountPlans(), 3);
  }
  auto store = this->Open();  // reopened: durable, migration idempotent
  ASSERT_NE(store, nullptr);
  absl::StatusOr<std::optional<WarmStartData>> found = store->Lookup(key);
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_TRUE(found->has_value());
  const WarmStartData& data = **found;
  EXPECT_TRUE(data.exact);
  EXPECT_EQ(data.fingerprint, key.fingerprint);
  EXPECT_EQ(data.distance, 0);
  EXPECT_EQ(data.policy_weights, weights);
  ASSERT_EQ(data.plans.size(), 3u);
  for (size_t i = 0; i < plans.size(); ++i) {
    EXPECT_EQ(data.plans[i].plan, plans[i].plan) << i;
    EXPECT_DOUBLE_EQ(data.plans[i].reward, plans[i].reward);
    EXPECT_DOUBLE_EQ(data.plans[i].output_tokens_per_s,
                     plans[i].output_tokens_per_s);
    EXPECT_EQ(data.plans[i].prediction_json, plans[i].prediction_json);
  }
}

TYPED_TEST(EliteStoreConformanceTest, KeepsTopKDistinctPlans) {
  auto problem = MakeProblem("llama-3.1-8b", 8);
  ASSERT_TRUE(problem.ok());
  const ProblemKey key = MakeProblemKey(*problem);
  auto store = this->Open(/*top_k=*/2);
  ASSERT_NE(store, nullptr);
  std::vector<StoredPlan> plans = Plans(4);
  ASSERT_TRUE(store->Record(key, *problem, plans, "").ok());
  EXPECT_EQ(*store->CountPlans(), 2);
  ASSERT_TRUE(store->Record(key, *problem, plans, "").ok());
  EXPECT_EQ(*store->CountPlans(), 2) << "the same plans are not duplicated";
  StoredPlan better = plans[3];
  better.reward = 5.0;
  ASSERT_TRUE(store->Record(key, *problem, {better}, "").ok());
  auto found = store->Lookup(key);
  ASSERT_TRUE(found.ok() && found->has_value());
  ASSERT_EQ((*found)->plans.size(), 2u);
  EXPECT_EQ((*found)->plans[0].plan, plans[3].plan);
  EXPECT_DOUBLE_EQ((*found)->plans[0].reward, 5.0);
  EXPECT_EQ((*found)->plans[1].plan, plans[0].plan);
}

// Each kind of plan keeps its own top-K: disaggregated plans worse than the
// aggregated ones stay, so the next disaggregated search finds its warm start.
TYPED_TEST(EliteStoreConformanceTest, KeepsTopKOfEachKind) {
  auto problem = MakeProblem("llama-3.1-8b", 8);
  ASSERT_TRUE(problem.ok());
  const ProblemKey key = MakeProblemKey(*problem);
  auto store = this->Open(/*top_k=*/2);
  ASSERT_NE(store, nullptr);
  std::vector<StoredPlan> disaggregated;
  for (int i = 0; i < 3; ++i) {
    StoredPlan stored;
    stored.plan.disaggregated = true;
    stored.plan.prefill_instances = 1;
    stored.plan.prefill.tp = 4;
    stored.plan.prefill.batch_size = 1 + i;
    stored.plan.decode_instances = 1;
    stored.plan.tp = 4;
    stored.plan.micro_batches = 1;
    stored.reward = -1.0 - 0.1 * i;  // below every aggregated plan
    stored.output_tokens_per_s = 100.0 - i;
    stored.prediction_json = "{\"feasible\":true}";
    disaggregated.push_back(stored);
  }
  ASSERT_TRUE(store->Record(key, *problem, Plans(4), "").ok());
  ASSERT_TRUE(store->Record(key, *problem, disaggregated, "").ok());
  EXPECT_EQ(*store->CountPlans(), 4);
  auto found = store->Lookup(key);
  ASSERT_TRUE(found.ok() && found->has_value());
  int kept = 0;
  for (const StoredPlan& p : (*found)->plans) {
    if (!p.plan.disaggregated) continue;
    EXPECT_TRUE(p.plan == disaggregated[0].plan ||
                p.plan == disaggregated[1].plan)
        << "the best two disaggregated plans are kept";
    ++kept;
  }
  EXPECT_EQ(kept, 2);
}

TYPED_TEST(EliteStoreConformanceTest, NearestProblemOfTheSameFamily) {
  auto store = this->Open();
  ASSERT_NE(store, nullptr);
  auto p1024 = MakeProblem("llama-3.1-8b", 8, 1024, 512);
  auto p8192 = MakeProblem("llama-3.1-8b", 8, 8192, 512);
  auto p2048 = MakeProblem("llama-3.1-8b", 8, 2048, 512);
  auto p16 = MakeProblem("llama-3.1-8b", 16, 2048, 512);
  ASSERT_TRUE(p1024.ok() && p8192.ok() && p2048.ok() && p16.ok());
  ASSERT_TRUE(
      store->Record(MakeProblemKey(*p1024), *p1024, Plans(1), "w1").ok());
  ASSERT_TRUE(store->Record(MakeProblemKey(*p8192), *p8192, Plans(2), "").ok());
  auto found = store->Lookup(MakeProblemKey(*p2048));
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_TRUE(found->has_value());
  EXPECT_FALSE((*found)->exact);
  EXPECT_EQ((*found)->fingerprint, MakeProblemKey(*p1024).fingerprint);
  EXPECT_DOUBLE_EQ((*found)->distance, 1);
  EXPECT_EQ((*found)->plans.size(), 1u);
  EXPECT_EQ((*found)->policy_weights, "w1") << "weights are per family";
  auto other_shape = store->Lookup(MakeProblemKey(*p16));
  ASSERT_TRUE(other_shape.ok());
  EXPECT_FALSE(other_shape->has_value());
}

TYPED_TEST(EliteStoreConformanceTest, PolicyWeightsAreReplacedPerFamily) {
  auto store = this->Open();
  ASSERT_NE(store, nullptr);
  auto problem = MakeProblem("llama-3.1-8b", 8);
  ASSERT_TRUE(problem.ok());
  const ProblemKey key = MakeProblemKey(*problem);
  ASSERT_TRUE(store->Record(key, *problem, Plans(1), "v1").ok());
  ASSERT_TRUE(store->Record(key, *problem, Plans(1), "").ok());
  EXPECT_EQ((*store->Lookup(key))->policy_weights, "v1") << "empty keeps";
  ASSERT_TRUE(store->Record(key, *problem, {}, "v2").ok());
  EXPECT_EQ((*store->Lookup(key))->policy_weights, "v2");
}

// Several writers, each with its own connection (as replicas have), record
// overlapping subsets of one plan pool for one problem at the same time. The
// result must be exactly the top-K of everything written: nothing lost, no
// duplicates, sorted.
TYPED_TEST(EliteStoreConformanceTest, ConcurrentWritersKeepAnExactTopK) {
  constexpr int kTopK = 5;
  constexpr int kWriters = 4;
  constexpr int kRounds = 12;
  auto problem = MakeProblem("llama-3.1-8b", 8);
  ASSERT_TRUE(problem.ok());
  const ProblemKey key = MakeProblemKey(*problem);
  const std::vector<StoredPlan> pool = Plans(16);
  std::vector<std::unique_ptr<EliteStore>> stores;
  for (int w = 0; w < kWriters; ++w) {
    stores.push_back(this->Open(kTopK));
    ASSERT_NE(stores.back(), nullptr);
  }
  std::vector<std::set<int>> written(kWriters);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937 rng(17 + w);
      for (int round = 0; round < kRounds; ++round) {
        std::vector<StoredPlan> batch;
        for (int i = 0; i < 16; ++i) {
          if (rng() % 3 == 0) {
            batch.push_back(pool[i]);
            written[w].insert(i);
          }
        }
        if (!stores[w]->Record(key, *problem, batch, "").ok()) ++failures;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  std::set<int> all;
  for (const auto& s : written) all.insert(s.begin(), s.end());
  ASSERT_GE(all.size(), static_cast<size_t>(kTopK));
  auto found = stores[0]->Lookup(key);
  ASSERT_TRUE(found.ok() && found->has_value()) << found.status();
  const std::vector<StoredPlan>& kept = (*found)->plans;
  ASSERT_EQ(kept.size(), static_cast<size_t>(kTopK));
  EXPECT_EQ(*stores[0]->CountPlans(), kTopK);
  // Pool index i has reward 1 - 0.01 i: the top-K are the K smallest indices
  // written.
  auto it = all.begin();
  for (int k = 0; k < kTopK; ++k, ++it) {
    EXPECT_EQ(kept[k].plan, pool[*it].plan) << k;
    EXPECT_DOUBLE_EQ(kept[k].reward, pool[*it].reward) << k;
  }
}

TYPED_TEST(EliteStoreConformanceTest, RefusesANewerSchemaAndLeavesItAlone) {
  ASSERT_NE(this->Open(), nullptr);
  EXPECT_EQ(this->backend_.SchemaVersion(), EliteStore::kSchemaVersion);
  this->backend_.SetSchemaVersion(99);
  EliteStore::Options options;
  options.path = this->backend_.location;
  absl::StatusOr<std::unique_ptr<EliteStore>> store = EliteStore::Open(options);
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(store.status())) << store.status();
  EXPECT_THAT(store.status().message(), HasSubstr("schema version 99"));
  EXPECT_THAT(store.status().message(), HasSubstr("newer"));
  EXPECT_EQ(this->backend_.SchemaVersion(), 99) << "left alone";
}

TYPED_TEST(EliteStoreConformanceTest, CalibrationProfilesAreReplacedByName) {
  {
    auto store = this->Open();
    ASSERT_NE(store, nullptr);
    EXPECT_TRUE(store->LoadProfiles()->empty());
    ASSERT_TRUE(
        store->SaveProfile({"mine", "vllm", "{\"a\":1}", "r1", 5}).ok());
    ASSERT_TRUE(store->SaveProfile({"alpha", "", "{}", "", 6}).ok());
    ASSERT_TRUE(
        store->SaveProfile({"mine", "sglang", "{\"a\":2}", "r2", 7}).ok());
  }
  auto store = this->Open();  // another connection / a restarted server
  ASSERT_NE(store, nullptr);
  absl::StatusOr<std::vector<StoredProfile>> profiles = store->LoadProfiles();
  ASSERT_TRUE(profiles.ok()) << profiles.status();
  ASSERT_EQ(profiles->size(), 2u);
  EXPECT_EQ((*profiles)[0].name, "alpha");
  EXPECT_EQ((*profiles)[0].engine, "");
  EXPECT_EQ((*profiles)[1].name, "mine");
  EXPECT_EQ((*profiles)[1].engine, "sglang");
  EXPECT_EQ((*profiles)[1].profile_json, "{\"a\":2}");
  EXPECT_EQ((*profiles)[1].report, "r2");
  EXPECT_EQ((*profiles)[1].updated_at_ms, 7);
}

// The pruning rule: the max_problems most recently searched problems stay,
// with their plans; the others go, and a family's weights with its last
// problem.
TYPED_TEST(EliteStoreConformanceTest, PruneKeepsTheMostRecentlySearched) {
  EliteStore::Options options;
  options.max_problems = 2;
  auto store = this->Open(options);
  ASSERT_NE(store, nullptr);
  std::vector<ProblemKey> keys;
  for (int isl : {512, 1024, 2048}) {
    auto problem = MakeProblem("llama-3.1-8b", 8, isl, 512);
    ASSERT_TRUE(problem.ok());
    keys.push_back(MakeProblemKey(*problem));
    ASSERT_TRUE(store->Record(keys.back(), *problem, Plans(2), "w").ok());
    absl::SleepFor(absl::Milliseconds(3));  // distinct updated_at_ms
  }
  // Searched again: the oldest problem becomes the most recent.
  auto first = MakeProblem("llama-3.1-8b", 8, 512, 512);
  ASSERT_TRUE(store->Record(keys[0], *first, Plans(2), "").ok());
  ASSERT_TRUE(store->Prune().ok());
  EXPECT_EQ(*store->CountPlans(), 4);
  EXPECT_TRUE((*store->Lookup(keys[0]))->exact);
  EXPECT_TRUE((*store->Lookup(keys[2]))->exact);
  auto pruned = store->Lookup(keys[1]);
  ASSERT_TRUE(pruned.ok() && pruned->has_value());
  EXPECT_FALSE((*pruned)->exact) << "the least recently searched went";
  EXPECT_EQ((*pruned)->policy_weights, "w");
  // A family without problems keeps no weights.
  EliteStore::Options none;
  none.max_age_days = 1;
  auto aged = this->Open(none);
  ASSERT_NE(aged, nullptr);
  EXPECT_TRUE(aged->Prune().ok());
  EXPECT_EQ(*aged->CountPlans(), 4) << "all searched today";
}

TYPED_TEST(EliteStoreConformanceTest, ProfilesStampChangesOnlyWithProfiles) {
  auto store = this->Open();
  ASSERT_NE(store, nullptr);
  absl::StatusOr<std::string> empty = store->ProfilesStamp();
  ASSERT_TRUE(empty.ok()) << empty.status();
  ASSERT_TRUE(store->SaveProfile({"mine", "vllm", "{}", "r", 5}).ok());
  absl::StatusOr<std::string> one = store->ProfilesStamp();
  ASSERT_TRUE(one.ok());
  EXPECT_NE(*one, *empty);
  EXPECT_EQ(*store->ProfilesStamp(), *one) << "nothing changed";
  ASSERT_TRUE(store->SaveProfile({"mine", "vllm", "{\"a\":1}", "r", 5}).ok());
  EXPECT_NE(*store->ProfilesStamp(), *one) << "replaced, same time";
}

// ---- PostgreSQL only --------------------------------------------------------

class PostgresStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    pg_ = SharedPostgres(&why);
    if (pg_ == nullptr) {
      if (!PostgresInstance().available()) GTEST_SKIP() << why;
      FAIL() << why;
    }
    url_ = FreshDatabase(*pg_);
  }
  absl::StatusOr<std::unique_ptr<EliteStore>> Open() {
    EliteStore::Options options;
    options.path = url_;
    options.reconnect_backoff_initial_ms = 50;
    options.reconnect_backoff_max_ms = 400;
    return EliteStore::Open(options);
  }
  PostgresInstance* pg_ = nullptr;
  std::string url_;
};

TEST(StoreLocationTest, PasswordIsNotInThePathUsedForLogs) {
  EXPECT_EQ(RedactStorePath("postgresql://u:secret@db:5432/x?sslmode=require"),
            "postgresql://u:***@db:5432/x?sslmode=require");
  EXPECT_EQ(RedactStorePath("postgres://h/x?password=secret&a=b"),
            "postgres://h/x?password=***&a=b");
  EXPECT_EQ(RedactStorePath("/var/lib/store.db"), "/var/lib/store.db");
  EXPECT_TRUE(IsPostgresUrl("postgres://h/x"));
  EXPECT_FALSE(IsPostgresUrl("./postgres.db"));
}

TEST(StoreLocationTest, PasswordInTheUrlIsDetectedForTheWarning) {
  EXPECT_TRUE(StorePathHasPassword("postgresql://u:secret@db:5432/x"));
  EXPECT_TRUE(StorePathHasPassword("postgres://h/x?password=secret"));
  // The advised form: user only, the password from PGPASSWORD / PGPASSFILE.
  EXPECT_FALSE(StorePathHasPassword("postgresql://u@db:5432/x"));
  EXPECT_FALSE(StorePathHasPassword("postgresql://db/x?sslmode=require"));
  EXPECT_FALSE(StorePathHasPassword("/var/lib/u:secret@store.db"));
}

// Waits (deadline-bounded) until a lookup succeeds again.
bool WaitUntilReachable(EliteStore& store, const ProblemKey& key) {
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::Now() < deadline) {
    if (store.Lookup(key).ok()) return true;
    absl::SleepFor(absl::Milliseconds(50));  // polling, deadline-bounded
  }
  return false;
}

TEST_F(PostgresStoreTest, DatabaseDownFailsFastThenReconnects) {
  absl::StatusOr<std::unique_ptr<EliteStore>> opened = Open();
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<EliteStore> store = *std::move(opened);
  EXPECT_TRUE(store->recovers_from_failures());
  auto problem = MakeProblem("llama-3.1-8b", 8);
  ASSERT_TRUE(problem.ok());
  const ProblemKey key = MakeProblemKey(*problem);
  ASSERT_TRUE(store->Record(key, *problem, Plans(2), "w").ok());

  ASSERT_TRUE(pg_->Stop());
  absl::StatusOr<std::optional<WarmStartData>> down = store->Lookup(key);
  EXPECT_TRUE(absl::IsUnavailable(down.status())) << down.status();
  EXPECT_TRUE(absl::IsUnavailable(store->Record(key, *problem, Plans(3), "")))
      << "a write while down fails (the search still ran)";
  EXPECT_FALSE(store->CountPlans().ok());

  ASSERT_TRUE(pg_->Start()) << pg_->ServerLog();
  ASSERT_TRUE(WaitUntilReachable(*store, key));
  auto found = store->Lookup(key);
  ASSERT_TRUE(found.ok() && found->has_value()) << found.status();
  EXPECT_EQ((*found)->plans.size(), 2u) << "committed data survived";
  EXPECT_TRUE(store->Record(key, *problem, Plans(3), "").ok());
  EXPECT_EQ(*store->CountPlans(), 3);
}

TEST_F(PostgresStoreTest, OpensWhileTheDatabaseIsDownAndMigratesLater) {
  ASSERT_TRUE(pg_->Stop());
  absl::StatusOr<std::unique_ptr<EliteStore>> opened = Open();
  ASSERT_TRUE(pg_->Start()) << pg_->ServerLog();  // before any assertion
  ASSERT_TRUE(opened.ok()) << opened.status();
  auto problem = MakeProblem("llama-3.1-8b", 8);
  ASSERT_TRUE(problem.ok());
  const ProblemKey key = MakeProblemKey(*problem);
  ASSERT_TRUE(WaitUntilReachable(**opened, key));
  EXPECT_TRUE((*opened)->Record(key, *problem, Plans(1), "").ok());
}

TEST_F(PostgresStoreTest, PersistenceKeepsThePostgresStoreThroughAnOutage) {
  absl::StatusOr<std::unique_ptr<EliteStore>> opened = Open();
  ASSERT_TRUE(opened.ok()) << opened.status();
  ServerMetrics metrics(1, {"random"});
  WarmStartPersistence history(*std::move(opened), metrics);
  auto problem = MakeProblem("llama-3.1-8b", 8);
  ASSERT_TRUE(problem.ok());
  const ProblemKey key = MakeProblemKey(*problem);
  history.Record(key, *problem, Plans(2), "w");
  EXPECT_EQ(history.Find(key, true).result, kWarmStartHitExact);
  ASSERT_TRUE(pg_->Stop());
  EXPECT_EQ(history.Find(key, true).result, kWarmStartDisabled);
  EXPECT_TRUE(history.enabled()) << "not turned off for good";
  ASSERT_TRUE(pg_->Start()) << pg_->ServerLog();
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  std::string result;
  while (absl::Now() < deadline) {
    result = history.Find(key, true).result;
    if (result == kWarmStartHitExact) break;
    absl::SleepFor(absl::Milliseconds(50));  // polling, deadline-bounded
  }
  EXPECT_EQ(result, kWarmStartHitExact);
}

}  // namespace
}  // namespace shardplan::server
