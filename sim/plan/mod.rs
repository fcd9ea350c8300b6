//! Pod IP capacity planning (`fabsim plan pods`, `fabsim plan node-cidr`): the budget model,
//! thresholds and node-range arithmetic of `k8s-cidr-migrations.md` §3–§4 (source [004], with
//! the node-range facts of [000]), in integers only, so that a verdict never hangs on a float's
//! rounding.
//!
//! - [`budget`] owns one node pool's numbers: demand, buffered need, the recommended subnet, the
//!   evaluation of a given subnet, occupancy and the 70/80/85 % status.
//! - [`node_cidr`] owns the overlay arithmetic (`--cluster-cidr` / `--node-cidr-mask-size`).
//! - [`pools`] reads a file of several pools, checks that their subnets do not overlap, carves a
//!   supernet into their subnets and gives the cluster-wide verdict.
//! - [`render`] prints all of it as a table or JSON.

pub mod budget;
pub mod node_cidr;
pub mod pools;
pub mod render;

pub use budget::{plan_pool, PoolInput, PoolPlan, Status, SubnetSpec};
pub use node_cidr::{node_cidr, NodeCidrPlan};
pub use pools::{plan_cluster, read_pools, ClusterPlan, PoolsFile};
