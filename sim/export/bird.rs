//! `--to bird`: the BIRD 1.6 configuration every Linux host runs in fabsim, as written — for a
//! Calico node what confd rendered at that moment (`bird.cfg`, `bird_aggr.cfg`,
//! `bird_ipam.cfg`), for a hand-written BIRD device its own files — one directory per host.
//!
//! Also the variant a stock BIRD 1.6.8 accepts (`stock_files`), which the netns and
//! containerlab labs run: Calico's fork adds the `krt_tunnel` route attribute, which upstream
//! BIRD rejects as an unknown symbol.

use std::sync::OnceLock;

use regex::Regex;

use super::{devices, file_name, Lab};
use crate::model::{DeviceId, Network};

pub(super) fn write_all(net: &Network, lab: &mut Lab) {
    for (id, dev) in devices(net) {
        for (name, text) in files(net, id) {
            lab.add(format!("{}/{name}", file_name(&dev.name)), text.clone());
        }
    }
}

/// The device's BIRD files as fabsim runs them (empty without BIRD).
fn files(net: &Network, dev: DeviceId) -> &[(String, String)] {
    net.device(dev)
        .bird
        .as_ref()
        .map(|b| b.files.as_slice())
        .unwrap_or_default()
}

/// The device's BIRD files for upstream BIRD 1.6.8: each `krt_tunnel = "…";` (Calico's fork:
/// which tunnel device the kernel route leaves by) dropped — where it is the whole branch of an
/// `if`, replaced by an empty block. Kernel routes then go out of the gateway's interface,
/// which is what `krt_tunnel = ""` means anyway; with a tunnel name the lab says it cannot
/// build IPIP (`export::limits`).
pub fn stock_files(net: &Network, dev: DeviceId) -> Vec<(String, String)> {
    static BRANCH: OnceLock<Regex> = OnceLock::new();
    static STMT: OnceLock<Regex> = OnceLock::new();
    let branch = BRANCH.get_or_init(|| Regex::new(r#"\b(then|else)(\s+)krt_tunnel\s*=\s*"[^"]*"\s*;"#).expect("regex"));
    let stmt = STMT.get_or_init(|| Regex::new(r#"(?m)^[ \t]*krt_tunnel\s*=\s*"[^"]*"\s*;[ \t]*\n"#).expect("regex"));
    files(net, dev)
        .iter()
        .map(|(name, text)| {
            let text = branch.replace_all(text, "$1$2{ } # krt_tunnel: Calico's BIRD fork only");
            (name.clone(), stmt.replace_all(&text, "").into_owned())
        })
        .collect()
}
