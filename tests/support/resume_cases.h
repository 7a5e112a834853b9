// The runs the resume tests cut and resume: a base scenario and one case per algorithm family.
#pragma once

#include <string>
#include <vector>

namespace testbed::resume_tests {

// 4 nodes of a small MLP on a 1 ms ring, 40 steps, at unequal speeds: where an algorithm lets
// nodes drift apart (gossip, delayed or overlapped ops, local SGD's unpicked nodes), fast nodes
// are steps ahead at a checkpoint, with ops to issue, ops in flight, rows and eval snapshots
// half filled.
const char* kBase = R"(name: resume
seed: 3
nodes: 4
threads: 1
topology: {kind: ring, link: {bandwidth: 100Mbps, latency: 1ms}}
workload: {model: mlp, dataset: synthetic, synthetic: {inputs: 32, hidden: 32, outputs: 4, train_samples: 2048, test_samples: 256},
           batch_size: 16, steps: 40, eval_every: 10}
optimizer: {name: adamw, lr: 1.0e-3, weight_decay: 0.01}
compute: {model: fixed, step_time: 10ms, speeds: [1, 0.5, 1, 0.8]}
)";

struct Case {
  const char* name;
  std::vector<std::string> sets;
  int every;  // output.resume_every
  int cut;    // the checkpoint the run is cut after
};

// Each cut falls where something is half done: DiLoCo mid-period, Streaming DiLoCo with a
// fragment in flight (tau 1), SPARTA with the previous step's exchange in flight (delay 1),
// local SGD mid-round with half the nodes picked, gossip over UDP that loses packets.
const std::vector<Case> kCases = {
    {"ddp", {"algorithm={name: ddp}"}, 7, 14},
    {"diloco", {"algorithm={name: diloco, H: 4}"}, 6, 18},
    {"streaming_diloco", {"algorithm={name: streaming_diloco, H: 6, fragments: 3, tau: 1}"}, 5, 25},
    {"sparta_delay1", {"algorithm={name: sparta, p: 0.1, delay: 1}"}, 7, 21},
    {"demo", {"algorithm={name: demo}"}, 9, 9},
    {"powersgd_rounds", {"algorithm={name: powersgd, start_iter: 3}"}, 5, 15},
    {"acpsgd", {"algorithm={name: acpsgd}"}, 5, 15},
    // One group per layer: cut while the next forward waits at its gates for the all-gathers.
    {"dear_gates", {"algorithm={name: dear, bucket_mb: 0.001}"}, 5, 15},
    {"gossip_udp_loss", {"algorithm={name: gossip}", "network.transport=udp", "topology.link.loss=0.02"}, 8, 16},
    {"local_sgd_fraction", {"algorithm={name: local_sgd, H: 3, fraction: 0.5}"}, 7, 28},
    // Dropout draws from LibTorch's global generator, which the checkpoint must carry too.
    {"gpt_dropout",
     {"algorithm={name: diloco, H: 4}", "workload.model=gpt", "workload.dataset=brown", "workload.synthetic={}",
      "workload.steps=12", "workload.eval_every=6", "workload.eval_samples=32", "workload.batch_size=4",
      "workload.gpt={preset: tiny, layers: 1, width: 32, heads: 2, context: 32, dropout: 0.2}"},
     5,
     5},
};

}  // namespace testbed::resume_tests
