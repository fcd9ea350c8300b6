//! `show ip interface [IF] brief` (§2.5) and the natural order of interface names
//! (`Ethernet2` before `Ethernet10`) that the EOS tables sort by.

use super::{incomplete, invalid, keyword, unsupported};
use crate::engine::State;
use crate::input::eos::canonical_interface;
use crate::model::{DeviceId, Network};
use crate::views::CommandError;

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Chunk {
    Text(String),
    Num(u64),
}

/// Order `Ethernet2` before `Ethernet10`, and `Ethernet…` before `Loopback…`.
pub(super) fn natural_key(name: &str) -> Vec<Chunk> {
    let mut out = Vec::new();
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        let digit = c.is_ascii_digit();
        let end = rest.find(|x: char| x.is_ascii_digit() != digit).unwrap_or(rest.len());
        let (part, tail) = rest.split_at(end);
        out.push(match digit {
            true => Chunk::Num(part.parse().unwrap_or(u64::MAX)),
            false => Chunk::Text(part.to_string()),
        });
        rest = tail;
    }
    out
}

/// An interface argument, one word (`Ethernet4`, `et4`) or two (`ethernet 4`), read as the
/// configuration parser reads it. Returns the canonical name and the number of words used. A type
/// word without its number is incomplete; anything else that names no interface is invalid.
fn parse_interface(w: &[&str]) -> Result<(String, usize), CommandError> {
    let first = w.first().ok_or_else(incomplete)?;
    if let Some(name) = canonical_interface(first) {
        return Ok((name, 1));
    }
    if let Some(name) = w.get(1).and_then(|n| canonical_interface(&format!("{first} {n}"))) {
        return Ok((name, 2));
    }
    let bare_type =
        !first.contains(|c: char| c.is_ascii_digit()) && canonical_interface(&format!("{first}1")).is_some();
    Err(if bare_type { incomplete() } else { invalid() })
}

pub(super) fn show_ip_interface(net: &Network, st: &State, dev: DeviceId, w: &[&str]) -> Result<String, CommandError> {
    let is_brief = |x: &&str| keyword(x, &["brief"]).is_ok();
    let (only, rest) = match w.first() {
        None => return Err(unsupported(&["show ip interface"])),
        Some(x) if is_brief(x) => (None, &w[1..]),
        Some(_) => {
            let (name, used) = parse_interface(w)?;
            let id = net
                .iface_by_name(dev, &name)
                .ok_or_else(|| CommandError::new("% Interface does not exist"))?;
            match w.get(used) {
                Some(x) if is_brief(x) => (Some(id), &w[used + 1..]),
                Some(_) => return Err(invalid()),
                None => return Err(unsupported(&["show ip interface", &name])),
            }
        }
    };
    if !rest.is_empty() {
        return Err(invalid());
    }
    let mut ifaces: Vec<_> = net
        .devices
        .get(dev.idx())
        .map(|d| d.ifaces.clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|i| only.is_none_or(|o| o == *i))
        .filter_map(|i| net.interfaces.get(i.idx()).map(|x| (i, x)))
        .filter(|(_, x)| x.routed)
        .collect();
    ifaces.sort_by_key(|(_, x)| natural_key(&x.name));
    let mut out = format!("{:72}Address\n", "");
    out.push_str(&brief_row(["Interface", "IP Address", "Status", "Protocol", "MTU"]));
    out.truncate(out.len() - 1);
    out.push_str("   Owner\n");
    out.push_str(&format!(
        "{} {} {} {} {} {}\n",
        "-".repeat(14),
        "-".repeat(20),
        "-".repeat(11),
        "-".repeat(13),
        "-".repeat(9),
        "-".repeat(7)
    ));
    for (id, iface) in ifaces {
        let s = st.ifaces.get(id.idx()).cloned().unwrap_or_default();
        let addr = s.addr.map_or("unassigned".to_string(), |a| a.to_string());
        let (status, protocol) = match (iface.admin_up, s.usable()) {
            (false, _) => ("adminDown", "down"),
            (true, true) => ("up", "up"),
            (true, false) => ("down", "down"),
        };
        out.push_str(&brief_row([
            &iface.name,
            &addr,
            status,
            protocol,
            &iface.mtu.to_string(),
        ]));
    }
    Ok(out)
}

/// A `show ip interface brief` row with the lab's column widths (14/20/11/13/9 dashes, §2.5).
/// The MTU ends two columns before its dashes end, as in every capture with the Owner column;
/// the empty Owner leaves no trailing blanks.
fn brief_row(c: [&str; 5]) -> String {
    let row = format!("{:<14} {:<20} {:<11} {:<13} {:>7}", c[0], c[1], c[2], c[3], c[4]);
    format!("{}\n", row.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::testnet::*;

    #[test]
    fn show_ip_interface_brief_spine_s0b() {
        let (mut lab, d) = spine1_s0();
        let et4 = lab.iface(d, "Ethernet4", None);
        lab.st.ifaces[et4.idx()].addr = Some(net("10.0.137.189/24"));
        lab.st.ifaces[et4.idx()].dhcp = true;
        let et5 = lab.iface(d, "Ethernet5", None);
        lab.net.interfaces[et5.idx()].admin_up = false;
        lab.st.ifaces[et5.idx()].up = false;
        let et6 = lab.iface(d, "Ethernet6", None);
        lab.net.interfaces[et6.idx()].routed = false;
        let lo = lab.iface(d, "Loopback0", Some("10.255.0.1/32"));
        lab.net.interfaces[lo.idx()].mtu = 65535;
        let out = lab.run(d, "show ip interface ethernet 4 brief").unwrap();
        assert_eq!(
            out,
            "                                                                        Address\n\
             Interface      IP Address           Status      Protocol          MTU   Owner\n\
             -------------- -------------------- ----------- ------------- --------- -------\n\
             Ethernet4      10.0.137.189/24      up          up               1500\n"
        );
        for cmd in ["sh ip int et4 br", "show ip int Ethernet4 brief", "sh ip int e 4 b"] {
            assert_eq!(lab.run(d, cmd).unwrap(), out, "{cmd}");
        }
        assert_lines(
            &out,
            "Interface IP Address Status Protocol MTU Owner\nEthernet4 10.0.137.189/24 up up 1500",
        );
        let all = lab.run(d, "sh ip int br").unwrap();
        let names: Vec<&str> = all.lines().skip(3).map(|l| l.split(' ').next().unwrap()).collect();
        assert_eq!(
            names,
            [
                "Ethernet1",
                "Ethernet2",
                "Ethernet3",
                "Ethernet4",
                "Ethernet5",
                "Loopback0"
            ]
        );
        assert!(all.contains("Ethernet5      unassigned           adminDown   down             1500\n"));
        assert!(all.contains("Loopback0      10.255.0.1/32        up          up              65535\n"));
        assert_eq!(lab.err(d, "sh ip int et9 br"), "% Interface does not exist");
        assert_eq!(lab.err(d, "sh ip i br"), "% Ambiguous command");
        assert_eq!(lab.err(d, "sh ip int br x"), "% Invalid input");
        assert_eq!(lab.err(d, "sh ip int ethernet"), "% Incomplete command");
        assert_eq!(lab.err(d, "sh ip int et br"), "% Incomplete command");
        assert_eq!(lab.err(d, "sh ip int foo4 br"), "% Invalid input");
        assert!(natural_key("Ethernet10") > natural_key("Ethernet9"));
    }
}
