#include "runner/distributed/world_config.h"

namespace trainrun {

namespace {

using YAML::Node;

SectionSpec<WorldConfig> declare_world() {
  using W = WorldConfig;
  return SectionSpec<W>()
      .key("nproc_per_node", &W::nproc_per_node, Type::Int, yaml("1"),
           "worker processes on this node (torchrun --nproc_per_node); auto = one per GPU on CUDA, one on a CPU")
      .min(1).choices({"auto"})
      .key("nnodes", &W::nnodes, Type::Int, yaml("1"), "nodes in the world; run the same command on each").min(1)
      .key("node_rank", &W::node_rank, Type::Int, yaml("0"), "this node's index, 0 .. nnodes-1").min(0)
      .key("master_addr", &W::master_addr, Type::String, yaml("127.0.0.1"),
           "address of node 0, where rank 0 hosts the rendezvous")
      .key("master_port", &W::master_port, Type::Int, yaml("29500"),
           "rendezvous port on node 0; 0 = any free port (one node only)")
      .range(0, 65535)
      .key("init_method", &W::init_method, Type::String, yaml("env"),
           "env (TCPStore at master_addr:master_port) | file:///shared/path (FileStore)")
      .key("backend", &W::backend, Type::String, yaml("auto"), "gloo | nccl | auto (nccl on CUDA, gloo on CPU)")
      .choices({"gloo", "nccl", "auto"})
      .key("timeout_s", &W::timeout_s, Type::Float, yaml("60"),
           "process-group timeout: a dead rank stops the others within it")
      .above(0)
      .key("max_restarts", &W::max_restarts, Type::Int, yaml("0"),
           "relaunch the whole world this many times after a failure")
      .min(0)
      .key("device", &W::device, Type::String, Node("auto"), "cpu | cuda | auto (cuda when available)")
      .choices({"cpu", "cuda", "auto"})
      // The job resolves `auto` (usable CPUs / local processes) before reading; one thread until then.
      .key("threads_per_proc", Type::Int, Node("auto"), "intra-op threads; auto = usable CPUs / local processes",
           [](W& w, const Node& v) { w.threads_per_proc = v.Scalar() == "auto" ? 1 : v.as<int64_t>(); })
      .min(1).choices({"auto"});
}

}  // namespace

const SectionSpec<WorldConfig>& world_section() {
  static const SectionSpec<WorldConfig> spec = declare_world();
  return spec;
}

WorldConfig WorldConfig::defaults() { return world_section().defaults(); }

}  // namespace trainrun
