//! Scenarios: a topology plus runbook steps. Each step's change is applied to the running
//! engine, the network evolves until quiet, and the step's expectations are checked before and
//! after. Also opens a plain topology (a scenario with no steps) for the query commands.

mod checks;
mod clock;
mod explain;
pub mod fabric;
pub mod fault;
pub mod file;
pub mod hardcoded;
pub mod html;
mod impact;
pub mod junit;
pub mod lint;
pub mod report;
mod run;
pub mod seeds;
mod tap;

pub use checks::RouteProtocol;
pub use clock::{describe as describe_outage, FlowReport, Outage};
pub use explain::{explain_probe, Explanation};
pub use file::{
    is_scenario, load_scenario, parse_duration, Action, Check, Expectation, FlowCheck, FlowExpectation, Scenario, Step,
    Timing,
};
pub use impact::{
    endpoints, Endpoint, GridBy, PairChange, PeerChange, ReachDelta, ReachGrid, ReachMatrix, DEFAULT_REACH_ENDPOINTS,
};
pub use run::*;
pub use tap::Tap;
