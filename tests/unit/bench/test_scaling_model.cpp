// The cost model of bench_scaling_model on hand-made profiles: each formula of
// bench/scaling/cost_model.h against the numbers worked out by hand, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/scaling/cost_model.h"
#include "bench/scaling/measure.h"
#include "bench/scaling/profile.h"

namespace S = rensa_bench::scaling;
using nlohmann::json;

namespace {

// alpha + beta * bytes, with points on the line at 1 kB and 10 MB.
json line(double alpha, double beta) {
  return {{"alpha", alpha},
          {"beta", beta},
          {"points", json::array({json::array({1e3, alpha + beta * 1e3}), json::array({1e7, alpha + beta * 1e7})})}};
}

// A model with two buckets of 1e6 and 5e5 float32 elements; D = 10 ms (backward 4 ms) at 2 processes.
S::Profile profile() {
  S::Profile p;
  p.machine()["cores"] = 2;
  p.set("buckets mlp", {{"elements", {1000000, 500000}}, {"params", {500000, 500000, 500000}}});
  p.set(S::compute_key("mlp", 100, 1, 1, "none"), {{"forward", 2e-3}, {"backward", 4e-3}, {"step", 8e-3}});
  for (const char* wire : {"float32", "float16"}) {
    p.set(S::compute_key("mlp", 100, 1, 2, wire),
          {{"forward", 3e-3}, {"backward", 4e-3}, {"update", 3e-3}, {"step", 10e-3}, {"straggle", 0.5e-3}});
  }
  p.set("intra k2 P2 float32", line(10e-6, 1e-10));
  p.set("intra k2 P2 float16", line(10e-6, 2e-10));
  // 2 hosts: the link costs 2 alpha + S beta with alpha 50 us and beta 1 ns/B; unshaped 0.2 ns/B.
  p.set("inter M2 slow float32", line(100e-6, 1e-9));
  p.set("inter M2 unshaped float32", line(0.0, 0.2e-9));
  return p;
}

S::Config config(int ranks, int hosts, const std::string& communicator = "flat", const std::string& mode = "overlap") {
  S::Config c;
  c.ranks = ranks;
  c.hosts = hosts;
  c.communicator = communicator;
  c.mode = mode;
  c.machine_procs = 2;
  if (hosts > 1) c.link = "slow";
  return c;
}

// predict fails naming the contention entry `key` that lacks double buffering's number.
void expect_named(const S::Profile& prof, const S::Config& c, const std::string& key) {
  try {
    S::predict(prof, c);
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("\"" + key + "\" has no number \"double_buffering\""), std::string::npos)
        << e.what();
  }
}

}  // namespace

TEST(ScalingModel, OneHostAddsTheSharedMemoryReductionAndTheStraggle) {
  const S::Prediction p = S::predict(profile(), config(2, 1));
  // Buckets of 4 MB and 2 MB: 2 * 10 us + 6e6 * 1e-10 s.
  EXPECT_NEAR(p.comm_cpu, 20e-6 + 6e-4, 1e-12);
  EXPECT_EQ(p.comm_wire, 0);
  EXPECT_NEAR(p.straggle, 0.5e-3, 1e-12);  // measured at 2 processes, 2 ranks: as measured
  EXPECT_NEAR(p.step, 10e-3 + 20e-6 + 6e-4 + 0.5e-3, 1e-12);
  EXPECT_NEAR(p.efficiency, 8e-3 / p.step, 1e-12);
  EXPECT_NEAR(p.of_dummy, 10e-3 / p.step, 1e-12);
  // float16 on the wire: half the bytes at its own rate.
  S::Config half = config(2, 1);
  half.wire = "float16";
  EXPECT_NEAR(S::predict(profile(), half).comm_cpu, 20e-6 + 3e6 * 2e-10, 1e-12);
  // Without overlap the gradients go in one collective: one latency.
  EXPECT_NEAR(S::predict(profile(), config(2, 1, "flat", "no_overlap")).comm_cpu, 10e-6 + 6e-4, 1e-12);
  // The dummy communicator: D alone.
  EXPECT_NEAR(S::predict(profile(), config(2, 1, "dummy")).step, 10e-3, 1e-12);
}

TEST(ScalingModel, TwoHostsSplitTheLinkIntoCpuAndWireAndHideOnlyWhatCanRunBeside) {
  // Flat, one rank per host: the measured 2-host cost, 100 us + S * 1 ns, per bucket; the CPU share
  // is the unshaped link's 0.2 ns/B.
  const S::Prediction overlap = S::predict(profile(), config(2, 2));
  const double total = 2 * 100e-6 + 6e6 * 1e-9, cpu = 6e6 * 0.2e-9;
  EXPECT_NEAR(overlap.comm_cpu, cpu, 1e-12);
  EXPECT_NEAR(overlap.comm_wire, total - cpu, 1e-12);
  // No core is free (2 processes on 2 cores) and TCP needs one to keep the link busy: without a
  // measured contention nothing hides, whatever the mode.
  const S::Prediction tcp = S::predict(profile(), config(2, 2, "flat", "overlap"));
  EXPECT_NEAR(tcp.exposed, 0, 1e-12);
  EXPECT_NEAR(tcp.step, 10e-3 + total + 0.5e-3, 1e-12);
  // Without overlap, and with double buffering, the gradients go in one collective: one latency.
  for (const char* mode : {"no_overlap", "double_buffering"}) {
    const S::Prediction p = S::predict(profile(), config(2, 2, "flat", mode));
    EXPECT_NEAR(p.exposed, 0, 1e-12) << mode;
    EXPECT_NEAR(p.step, 10e-3 + 100e-6 + 6e6 * 1e-9 + 0.5e-3, 1e-12) << mode;
  }
  // A link that moves the bytes itself: its wire time hides behind backward (4 ms), except the last
  // bucket's; behind the whole step (10 ms) with double buffering.
  S::Config rdma = config(2, 2);
  rdma.offload = true;
  const double last_wire = 100e-6 + 2e6 * 0.8e-9;
  const S::Prediction o = S::predict(profile(), rdma);
  EXPECT_NEAR(o.exposed, std::max(total - cpu - 4e-3, last_wire), 1e-12);
  EXPECT_NEAR(o.step, 10e-3 + cpu + o.exposed + 0.5e-3, 1e-12);
  rdma.mode = "double_buffering";
  EXPECT_NEAR(S::predict(profile(), rdma).step, 10e-3 + cpu + 0.5e-3, 1e-12);
  // With a free core per rank all of it hides: behind backward, except the last bucket...
  S::Config wide = config(2, 2);
  wide.cores = 8;
  EXPECT_NEAR(S::predict(profile(), wide).step, 10e-3 + std::max(total - 4e-3, 100e-6 + 2e6 * 1e-9) + 0.5e-3, 1e-12);
  // ... and behind the whole step with double buffering.
  wide.mode = "double_buffering";
  EXPECT_NEAR(S::predict(profile(), wide).step, 10e-3 + 0.5e-3, 1e-12);
}

TEST(ScalingModel, WithoutAFreeCoreCollectivesBesideTheComputationCostWhatWasMeasured) {
  S::Profile prof = profile();
  // Averaging the buckets adds 2 ms beside backward, 1.5 ms beside a step.
  // The ranks ran in lockstep through the collectives, the dummy step free: each entry holds the
  // 0.5 ms straggle of 2 ranks, which the straggle term charges, so it is charged once.
  prof.set("beside k2 P2 float32", {{"overlap", 2e-3}, {"double_buffering", 1.5e-3}});
  const double alone = 20e-6 + 6e-4;  // the two buckets' shared-memory allreduce alone
  const double s = 0.5e-3;
  const S::Prediction o = S::predict(prof, config(2, 1));
  EXPECT_NEAR(o.contention, 2e-3 - alone - s, 1e-12);
  EXPECT_EQ(o.contention_link, 0);  // one host
  EXPECT_NEAR(o.straggle, s, 1e-12);
  EXPECT_NEAR(o.step, 10e-3 + 2e-3, 1e-12);  // D, then what beside backward added, the straggle in it
  // Double buffering averages every gradient in one collective: one latency alone.
  const S::Prediction db = S::predict(prof, config(2, 1, "flat", "double_buffering"));
  EXPECT_NEAR(db.contention, 1.5e-3 - (10e-6 + 6e-4) - s, 1e-12);
  EXPECT_NEAR(db.step, 10e-3 + 1.5e-3, 1e-12);
  // Measured against dummy steps in lockstep (as measure does now), an entry holds no straggle.
  prof.set("beside k2 P2 float32", {{"overlap", 2e-3}, {"double_buffering", 1.5e-3}, {"baseline", "lockstep"}});
  const S::Prediction lock = S::predict(prof, config(2, 1));
  EXPECT_NEAR(lock.contention, 2e-3 - alone, 1e-12);
  EXPECT_NEAR(lock.step, 10e-3 + 2e-3 + s, 1e-12);
  // It can at most hide the collectives.
  prof.set("beside k2 P2 float32", {{"overlap", 2e-3}, {"double_buffering", -1e-3}});
  EXPECT_NEAR(S::predict(prof, config(2, 1, "flat", "double_buffering")).step, 10e-3 + 0.5e-3, 1e-12);
  // Not without overlap, not for the dummy communicator, not without the wire's entry.
  EXPECT_EQ(S::predict(prof, config(2, 1, "flat", "no_overlap")).contention, 0);
  EXPECT_EQ(S::predict(prof, config(2, 1, "dummy")).contention, 0);
  S::Config half = config(2, 1);
  half.wire = "float16";
  EXPECT_EQ(S::predict(prof, half).contention, 0);
  // An entry without the mode's number is named.
  prof.set("beside k2 P2 float32", {{"overlap", 2e-3}});
  expect_named(prof, config(2, 1, "flat", "double_buffering"), "beside k2 P2 float32");
  // With a free core the collectives hide instead.
  S::Config wide = config(2, 1);
  wide.cores = 8;
  const S::Prediction w = S::predict(prof, wide);
  EXPECT_EQ(w.contention, 0);
  EXPECT_NEAR(w.step, 10e-3 + 10e-6 + 2e6 * 1e-10 + 0.5e-3, 1e-12);  // the last bucket's, after backward
}

TEST(ScalingModel, AcrossHostsTheLinksCollectivesBesideTheComputationCostWhatWasMeasured) {
  S::Profile prof = profile();
  // Over the link, one rank on each of 2 hosts: averaging the buckets adds 3 ms beside backward and
  // 2 ms beside a step, where alone they cost 2 * 100 us + 6e6 * 1 ns (buckets) or 100 us + 6e6 * 1 ns
  // (one collective).
  prof.set(S::beside_link_key(2, 1, 2, "flat", "slow", "float32"), {{"overlap", 3e-3}, {"double_buffering", 2e-3}});
  const double buckets = 2 * 100e-6 + 6e6 * 1e-9, one = 100e-6 + 6e6 * 1e-9;
  // Each entry holds the 0.5 ms straggle of its ranks in lockstep (charged by the straggle term).
  const double s = 0.5e-3;
  const S::Prediction o = S::predict(prof, config(2, 2));
  EXPECT_NEAR(o.contention_link, 3e-3 - buckets - s, 1e-12);
  EXPECT_NEAR(o.contention, o.contention_link, 1e-12);
  EXPECT_NEAR(o.step, 10e-3 + 3e-3, 1e-12);  // D, then what beside backward added
  const S::Prediction db = S::predict(prof, config(2, 2, "flat", "double_buffering"));
  EXPECT_NEAR(db.contention_link, 2e-3 - one - s, 1e-12);
  EXPECT_NEAR(db.step, 10e-3 + 2e-3, 1e-12);
  // Beside the host's own term, at 2 ranks per host (4 processes on 2 cores): both are added.
  prof.set("beside k2 P4 float32", {{"overlap", 1e-3}, {"double_buffering", 1e-3}});
  for (const char* wire : {"float32", "float16"}) {
    prof.set(S::compute_key("mlp", 100, 1, 4, wire),
             {{"forward", 3e-3}, {"backward", 4e-3}, {"update", 3e-3}, {"step", 10e-3}, {"straggle", 0.5e-3}});
  }
  prof.set("intra k2 P4 float32", line(10e-6, 1e-10));
  prof.set("allgather k2 P4", line(5e-6, 1e-10));
  S::Config four = config(4, 2);
  four.machine_procs = 4;
  const S::Prediction f = S::predict(prof, four);
  EXPECT_NEAR(f.contention_link, 3e-3 - buckets - s, 1e-12);
  EXPECT_NEAR(f.contention - f.contention_link, 1e-3 - (20e-6 + 6e-4) - s, 1e-12);
  // Measured at that load over the 4 ranks through the communicator, its entry replaces both: it
  // less the communicator's collectives alone there. Flat: the 2-host allreduce and two allgathers
  // within each host, per bucket.
  const std::string at_load = S::beside_link_key(2, 2, 4, "flat", "slow", "float32");
  EXPECT_EQ(at_load, "beside M2 k2 P4 flat slow float32");
  prof.set(at_load, {{"overlap", 5e-3}, {"double_buffering", 4e-3}});
  const double gathers = 2 * (2 * 5e-6) + 2 * 6e6 * 1e-10;
  const S::Prediction l = S::predict(prof, four);
  EXPECT_NEAR(l.contention_link, 5e-3 - (buckets + gathers) - s, 1e-12);
  EXPECT_NEAR(l.contention, l.contention_link, 1e-12);
  EXPECT_NEAR(l.step, 10e-3 + 5e-3, 1e-12);  // D, then what beside backward added
  prof.set(at_load, {{"overlap", 5e-3}, {"double_buffering", 4e-3}, {"baseline", "lockstep"}});
  EXPECT_NEAR(S::predict(prof, four).contention, 5e-3 - (buckets + gathers), 1e-12);  // no straggle in it
  prof.set(at_load, {{"overlap", 5e-3}, {"double_buffering", 4e-3}});
  four.mode = "double_buffering";
  const double one_gathers = 2 * (5e-6 + 6e6 * 1e-10);
  EXPECT_NEAR(S::predict(prof, four).contention, 4e-3 - (one + one_gathers) - s, 1e-12);
  // Hierarchical has its own: the shared-memory allreduce, the 2-host one and a broadcast.
  prof.set("bcast k2 P4", line(5e-6, 1e-10));
  four.mode = "overlap";
  four.communicator = "hierarchical";
  const double both = S::predict(prof, four).contention;  // without its entry: both terms, as before
  EXPECT_NEAR(both, (1e-3 - (20e-6 + 6e-4) - s) + (3e-3 - buckets - s), 1e-12);
  prof.set(S::beside_link_key(2, 2, 4, "hierarchical", "slow", "float32"), {{"overlap", 6e-3}});
  const double shm_bcast = 2 * 10e-6 + 6e6 * 1e-10 + 2 * 5e-6 + 6e6 * 1e-10;
  EXPECT_NEAR(S::predict(prof, four).contention, 6e-3 - (buckets + shm_bcast) - s, 1e-12);
  four.communicator = "flat";
  prof.set(at_load, {{"overlap", 5e-3}});
  four.mode = "double_buffering";
  expect_named(prof, four, "beside M2 k2 P4 flat slow float32");
  // It can at most hide the collectives: the link's part is what is left beside the host's.
  prof.set(S::beside_link_key(2, 1, 2, "flat", "slow", "float32"), {{"overlap", -1.0}, {"double_buffering", 2e-3}});
  const S::Prediction hid = S::predict(prof, config(2, 2));
  EXPECT_NEAR(hid.step, 10e-3 + 0.5e-3, 1e-12);
  EXPECT_NEAR(hid.contention_link, -buckets, 1e-12);
  // Not without overlap, not with a free core, not for another link or wire, not for a link given
  // by its alpha and beta.
  prof.set(S::beside_link_key(2, 1, 2, "flat", "slow", "float32"), {{"overlap", 3e-3}, {"double_buffering", 2e-3}});
  EXPECT_EQ(S::predict(prof, config(2, 2, "flat", "no_overlap")).contention_link, 0);
  S::Config wide = config(2, 2);
  wide.cores = 8;
  EXPECT_EQ(S::predict(prof, wide).contention_link, 0);
  S::Config half = config(2, 2);
  half.wire = "float16";
  prof.set("inter M2 slow float16", line(100e-6, 1e-9));
  EXPECT_EQ(S::predict(prof, half).contention_link, 0);
  S::Config given = config(2, 2);
  given.link = "";
  given.link_alpha = 50e-6;
  given.link_beta = 1e-9;
  EXPECT_EQ(S::predict(prof, given).contention_link, 0);
  // An entry without the mode's number is named.
  prof.set(S::beside_link_key(2, 1, 2, "flat", "slow", "float32"), {{"overlap", 3e-3}});
  expect_named(prof, config(2, 2, "flat", "double_buffering"), "beside M2 slow float32");
}

TEST(ScalingModel, ManyHostsFollowTheRingAndTheStraggleGrows) {
  // Hierarchical over 8 hosts of 2 ranks: shared memory + ring over 8 + broadcast within the host.
  S::Profile p = profile();
  p.set("bcast k2 P2", line(5e-6, 0.5e-10));
  S::Config c = config(16, 8, "hierarchical", "no_overlap");
  const S::Prediction h = S::predict(p, c);
  const double bytes = 6e6, alpha = 50e-6, beta = 1e-9;
  // Recursive halving and doubling: 2 log2 8 = 6 latencies (the ring would wait 14).
  const double ring = 6 * alpha + 14.0 / 8 * bytes * beta;
  EXPECT_NEAR(h.comm_cpu + h.comm_wire, (10e-6 + bytes * 1e-10) + ring + (5e-6 + bytes * 0.5e-10), 1e-12);
  EXPECT_NEAR(h.comm_cpu, 10e-6 + bytes * 1e-10 + 14.0 / 8 * bytes * 0.2e-9 + 5e-6 + bytes * 0.5e-10, 1e-12);
  // The straggle measured between 2 processes, scaled to 16 ranks by the normal's expected maximum.
  EXPECT_GT(h.straggle, 0.5e-3 * 3);
  EXPECT_LT(h.straggle, 0.5e-3 * 3.5);
  // Flat over the same hosts: MPI's Rabenseifner allreduce halves with the nearest rank first, so its
  // first and last steps stay within each host (two allgathers' worth of shared memory) and the
  // links carry what one allreduce over the 8 hosts carries.
  p.set("allgather k2 P2", line(4e-6, 0.4e-10));
  const double host = 2 * (4e-6 + bytes * 0.4e-10);
  c.communicator = "flat";
  const S::Prediction f = S::predict(p, c);
  EXPECT_NEAR(f.comm_cpu + f.comm_wire, host + ring, 1e-12);
  EXPECT_NEAR(f.comm_cpu, host + 14.0 / 8 * bytes * 0.2e-9, 1e-12);
  // A link given by alpha and beta instead of a measured one.
  c.link.clear();
  c.link_alpha = 2e-6;
  c.link_beta = 1e-10;
  EXPECT_NEAR(S::predict(p, c).comm_wire + S::predict(p, c).comm_cpu, host + 6 * 2e-6 + 14.0 / 8 * bytes * 1e-10,
              1e-12);
  // One rank on each of 16 hosts: every step of the allreduce crosses a link.
  S::Config single = config(16, 16, "flat", "no_overlap");
  const S::Prediction s16 = S::predict(p, single);
  EXPECT_NEAR(s16.comm_cpu + s16.comm_wire, 8 * alpha + 30.0 / 16 * bytes * beta, 1e-12);
  // Below 8 kB Open MPI picks other algorithms at 4 ranks: the formula over every rank stays, whatever K.
  S::Profile small = p;
  small.set("buckets mlp", {{"elements", {1000}}, {"params", {1000}}});
  const S::Prediction sm = S::predict(small, config(4, 2, "flat", "no_overlap"));
  EXPECT_NEAR(sm.comm_cpu + sm.comm_wire, 4 * alpha + 6.0 / 4 * 4e3 * beta, 1e-12);
  // Three hosts: the ring's 4 latencies are fewer than 2 ceil(log2 3) = 4; equal here, and 3 ranks
  // of one host each move 4/3 of the bytes.
  S::Config three = config(3, 3, "flat", "no_overlap");
  three.machine_procs = 2;
  const S::Prediction t = S::predict(p, three);
  EXPECT_NEAR(t.comm_cpu + t.comm_wire, 4 * alpha + 4.0 / 3 * bytes * beta, 1e-12);
}

TEST(ScalingModel, BadConfigurationsAndMissingEntriesAreNamed) {
  const S::Profile p = profile();
  auto message = [&](const S::Config& c) {
    try {
      S::predict(p, c);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(config(3, 2)).find("3 ranks do not fill 2 hosts"), std::string::npos);
  S::Config no_link = config(2, 2);
  no_link.link.clear();
  EXPECT_NE(message(no_link).find("need a link"), std::string::npos);
  EXPECT_NE(message(config(2, 1, "flat", "sometimes")).find("unknown mode 'sometimes'"), std::string::npos);
  EXPECT_NE(message(config(2, 1, "ring")).find("unknown communicator 'ring'"), std::string::npos);
  EXPECT_NE(message(config(2, 2, "single_node")).find("single_node needs every rank on one host"), std::string::npos);
  S::Config four = config(4, 1);
  four.machine_procs = 4;
  const std::string missing = message(four);
  EXPECT_NE(missing.find("no entry \"compute mlp b100 t1 P4 float32\""), std::string::npos) << missing;
  EXPECT_NE(missing.find("measure"), std::string::npos) << missing;
  S::Config other_link = config(2, 2);
  other_link.link = "fast";
  EXPECT_NE(message(other_link).find("inter M2 fast float32"), std::string::npos);
}

TEST(ScalingModel, FitsAndProfileFiles) {
  const json f = S::fit_affine({{1e3, 1e-5 + 1e3 * 2e-9}, {1e5, 1e-5 + 1e5 * 2e-9}, {1e7, 1e-5 + 1e7 * 2e-9}});
  EXPECT_NEAR(f["alpha"].get<double>(), 1e-5, 1e-12);
  EXPECT_NEAR(f["beta"].get<double>(), 2e-9, 1e-18);
  // A latency that comes out negative is dropped: the line through 0.
  const json g = S::fit_affine({{1e3, 1e-6}, {1e6, 2e-3}});
  EXPECT_EQ(g["alpha"].get<double>(), 0);
  EXPECT_GT(g["beta"].get<double>(), 0);

  const std::string path = ::testing::TempDir() + "scaling_profile.json";
  std::remove(path.c_str());
  EXPECT_FALSE(S::Profile::load(path).has("buckets mlp"));  // absent: empty
  profile().save(path);
  const S::Profile back = S::Profile::load(path);
  EXPECT_NEAR(S::predict(back, config(2, 2)).step, S::predict(profile(), config(2, 2)).step, 1e-15);
  std::ofstream(path) << "{\"not\": 1}";
  EXPECT_THROW(
      {
        try {
          S::Profile::load(path);
        } catch (const std::runtime_error& e) {
          EXPECT_NE(std::string(e.what()).find(path), std::string::npos);
          throw;
        }
      },
      std::runtime_error);
  std::ofstream(path) << "{truncated";
  EXPECT_THROW(S::Profile::load(path), std::runtime_error);
  std::remove(path.c_str());
}

TEST(ScalingModel, MedianOfProfilesTakesEachNumberApart) {
  const std::string dir = ::testing::TempDir();
  const std::string key = S::compute_key("mlp", 100, 1, 2, "float32");
  std::vector<S::Profile> profiles;
  const double steps[] = {10e-3, 20e-3, 9e-3};
  const double betas[] = {1e-10, 3e-10, 2e-10};
  for (int i = 0; i < 3; ++i) {
    S::Profile p = profile();
    json compute = p.at(key, "");
    compute["step"] = steps[i];
    p.set(key, compute);
    p.set("intra k2 P2 float32", line(10e-6 * (i + 1), betas[i]));
    const std::string path = dir + "median_" + std::to_string(i) + ".json";
    p.save(path);
    profiles.push_back(S::Profile::load(path));
  }
  const S::Profile m = S::median_profile(profiles);
  EXPECT_EQ(m.at(key, "")["step"].get<double>(), 10e-3);
  EXPECT_EQ(m.at(key, "")["backward"].get<double>(), 4e-3);
  const json& fit = m.at("intra k2 P2 float32", "");
  EXPECT_EQ(fit["alpha"].get<double>(), 20e-6);
  EXPECT_EQ(fit["beta"].get<double>(), 2e-10);
  EXPECT_EQ(fit["points"][1][0].get<double>(), 1e7);  // the sizes themselves agree
  EXPECT_EQ(m.at("buckets mlp", "")["elements"], json::array({1000000, 500000}));
  EXPECT_EQ(m.machine()["cores"], 2);
  // An even count: the mean of the middle two.
  profiles.pop_back();
  EXPECT_EQ(S::median_profile(profiles).at(key, "")["step"].get<double>(), 15e-3);

  // Profiles of different contents are refused, naming the entry and the file.
  const auto refused = [&](const S::Profile& odd, const std::string& what) {
    const std::string path = dir + "median_odd.json";
    odd.save(path);
    std::vector<S::Profile> two = {profiles.front(), S::Profile::load(path)};
    try {
      S::median_profile(two);
      ADD_FAILURE() << "no error for " << what;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
    std::remove(path.c_str());
  };
  S::Profile shape = profile();
  shape.set("buckets mlp", {{"elements", {1000000}}, {"params", {500000, 500000, 500000}}});
  refused(shape, "buckets mlp");
  S::Profile missing = profile();
  missing.set("inter M2 slow float16", line(0.0, 1e-9));
  refused(missing, "entries");
  EXPECT_THROW(S::median_profile({}), std::runtime_error);
  for (int i = 0; i < 3; ++i) std::remove((dir + "median_" + std::to_string(i) + ".json").c_str());
}

// Regression: a collective slower than the window was timed once per repeat, so the profile held
// the median of single calls, below the mean a step pays where a few calls take much longer.
TEST(ScalingModel, EachRepeatAveragesSeveralCallsOfASlowCollective) {
  EXPECT_EQ(S::calls_per_repeat(0.090, 0.020, 0.1), S::kMinCollectiveCalls);  // 7 MB over 1 Gbit/s
  EXPECT_EQ(S::calls_per_repeat(0.5, 0, 0.1), S::kMinCollectiveCalls);
  EXPECT_GE(S::kMinCollectiveCalls, 5);
  EXPECT_EQ(S::calls_per_repeat(1.0 / 1024, 0, 0.125), 128);  // fast ones fill the window
  EXPECT_EQ(S::calls_per_repeat(1.0 / 128, 1.0 / 128, 0.125), 8);
  EXPECT_GT(S::calls_per_repeat(0, 0, 0.1), 100000);  // a call too fast to time: bounded, no division by 0
}
