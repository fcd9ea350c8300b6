//! Views render State the way the real tools do (EOS `show`, Linux `ip`, iputils `ping`,
//! `tracepath`, `traceroute`). Views format; they never compute routing.

pub mod eos;
pub mod linux;

use crate::engine::State;
use crate::model::{DeviceId, Network};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandError {
    pub message: String,
}

/// Placeholder until the views branch lands.
pub fn run_command(net: &Network, st: &State, dev: DeviceId, line: &str) -> Result<String, CommandError> {
    let _ = (net, st, dev, line);
    Err(CommandError {
        message: "views not merged yet".into(),
    })
}
