//! BGP messages from bytes: the reverse of `bgp`, for a real speaker's TCP stream
//! (`fabsim peer`). Errors are the NOTIFICATION the receiver sends (RFC 4271 §6: code,
//! subcode), never a panic: every length is checked before it is used.
//!
//! Written here rather than with `bgp-rs` 0.6's reader: that reader returns `io::Error`s
//! without the RFC 4271 error code and subcode a NOTIFICATION needs, and fabsim's encoder is
//! already here (`bgp`), so each message kind is read next to the code that writes it.
//!
//! Only what fabsim's speakers model is read: 4-octet AS (a peer that does not offer it is
//! refused, Unsupported Capability), IPv4 unicast NLRI in the UPDATE's own fields, ADD-PATH
//! path identifiers when negotiated; ORIGIN, AS_PATH, NEXT_HOP, MED, LOCAL_PREF. Other
//! optional attributes are skipped; AS_SET members are appended to the path.

use std::net::Ipv4Addr;
use std::sync::Arc;

use ipnet::Ipv4Net;

use crate::engine::{Advertised, BgpMessage, BgpOrigin, PathAttrs};

const HEADER: usize = 19;
const MAX_MESSAGE: usize = 4096;

/// A message that cannot be accepted: the NOTIFICATION to send back, and why in words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub code: u8,
    pub subcode: u8,
    pub why: String,
}

impl Error {
    fn new(code: u8, subcode: u8, why: impl Into<String>) -> Self {
        Error {
            code,
            subcode,
            why: why.into(),
        }
    }

    /// The NOTIFICATION that reports this error to the peer.
    pub fn notification(&self) -> BgpMessage {
        BgpMessage::Notification {
            code: self.code,
            subcode: self.subcode,
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (NOTIFICATION {}/{})", self.why, self.code, self.subcode)
    }
}

// RFC 4271 §4.5 error codes.
const HEADER_ERROR: u8 = 1;
const OPEN_ERROR: u8 = 2;
const UPDATE_ERROR: u8 = 3;

fn header_error(subcode: u8, why: impl Into<String>) -> Error {
    Error::new(HEADER_ERROR, subcode, why)
}
fn open_error(subcode: u8, why: impl Into<String>) -> Error {
    Error::new(OPEN_ERROR, subcode, why)
}
fn update_error(subcode: u8, why: impl Into<String>) -> Error {
    Error::new(UPDATE_ERROR, subcode, why)
}

/// The length of the message at the start of `buf` once all of it has arrived (`None`: read
/// more). Checks the header (RFC 4271 §6.1: marker, length).
pub fn message_len(buf: &[u8]) -> Result<Option<usize>, Error> {
    if buf.len() < HEADER {
        return Ok(None);
    }
    if buf[..16].iter().any(|b| *b != 0xff) {
        return Err(header_error(1, "connection not synchronized (marker is not all ones)"));
    }
    let len = usize::from(u16::from_be_bytes([buf[16], buf[17]]));
    if !(HEADER..=MAX_MESSAGE).contains(&len) {
        return Err(header_error(2, format!("bad message length {len}")));
    }
    Ok((buf.len() >= len).then_some(len))
}

/// One whole message (header included, as `message_len` delimited it). `add_path`: ADD-PATH
/// was negotiated for what this side receives, so NLRI carry path identifiers.
pub fn decode(msg: &[u8], add_path: bool) -> Result<BgpMessage, Error> {
    let len = message_len(msg)?.ok_or_else(|| header_error(2, "truncated message"))?;
    let body = &msg[HEADER..len];
    let min = |n: usize| {
        if len < n {
            Err(header_error(2, format!("bad message length {len}")))
        } else {
            Ok(())
        }
    };
    match msg[18] {
        1 => min(29).and_then(|_| open(body)),
        2 => min(23).and_then(|_| update(body, add_path)),
        3 => min(21).map(|_| BgpMessage::Notification {
            code: body[0],
            subcode: body[1],
        }),
        4 if len == HEADER => Ok(BgpMessage::Keepalive),
        4 => Err(header_error(2, format!("bad message length {len}"))),
        t => Err(header_error(3, format!("bad message type {t}"))),
    }
}

/// A reader over a field: every take checks the length first.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_be_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// OPEN (RFC 4271 §4.2, §6.2) with its capabilities (RFC 5492): 4-octet AS (RFC 6793),
/// ADD-PATH for IPv4 unicast (RFC 7911). The ASN is the 4-octet capability's.
fn open(body: &[u8]) -> Result<BgpMessage, Error> {
    let malformed = || open_error(0, "malformed OPEN");
    let mut c = Cursor(body);
    let version = c.u8().ok_or_else(malformed)?;
    if version != 4 {
        return Err(open_error(1, format!("unsupported version number {version}")));
    }
    let _my_as = c.u16().ok_or_else(malformed)?;
    let hold_s = c.u16().ok_or_else(malformed)?;
    if hold_s == 1 || hold_s == 2 {
        return Err(open_error(6, format!("unacceptable hold time {hold_s}")));
    }
    let router_id = Ipv4Addr::from(c.u32().ok_or_else(malformed)?);
    if router_id.is_unspecified() {
        return Err(open_error(3, "bad BGP identifier 0.0.0.0"));
    }
    let params_len = usize::from(c.u8().ok_or_else(malformed)?);
    let mut params = Cursor(c.take(params_len).ok_or_else(malformed)?);
    if !c.is_empty() {
        return Err(malformed());
    }
    let (mut asn, mut add_path_rx, mut add_path_tx) = (None, false, false);
    while !params.is_empty() {
        let kind = params.u8().ok_or_else(malformed)?;
        let len = usize::from(params.u8().ok_or_else(malformed)?);
        let value = params.take(len).ok_or_else(malformed)?;
        if kind != 2 {
            return Err(open_error(4, format!("unsupported optional parameter {kind}")));
        }
        let mut caps = Cursor(value);
        while !caps.is_empty() {
            let code = caps.u8().ok_or_else(malformed)?;
            let len = usize::from(caps.u8().ok_or_else(malformed)?);
            let mut v = Cursor(caps.take(len).ok_or_else(malformed)?);
            match code {
                65 => asn = Some(v.u32().ok_or_else(malformed)?),
                69 => {
                    // RFC 7911 §4: <AFI, SAFI, Send/Receive> tuples; the sender's view.
                    while !v.is_empty() {
                        let (afi, safi, sr) = (v.u16(), v.u8(), v.u8());
                        let (Some(afi), Some(safi), Some(sr)) = (afi, safi, sr) else {
                            return Err(malformed());
                        };
                        if afi == 1 && safi == 1 {
                            add_path_rx = sr & 1 != 0;
                            add_path_tx = sr & 2 != 0;
                        }
                    }
                }
                _ => {}
            }
        }
    }
    let asn = asn.ok_or_else(|| open_error(7, "the peer does not offer 4-octet AS numbers (RFC 6793)"))?;
    Ok(BgpMessage::Open {
        asn,
        hold_s: u32::from(hold_s),
        router_id,
        add_path_rx,
        add_path_tx,
    })
}

/// Prefixes of an NLRI field or the withdrawn routes (RFC 4271 §4.3, RFC 7911 §3).
fn prefixes(field: &[u8], add_path: bool) -> Result<Vec<(Ipv4Net, u32)>, Error> {
    let invalid = || update_error(10, "invalid network field");
    let mut c = Cursor(field);
    let mut out = Vec::new();
    while !c.is_empty() {
        let id = if add_path { c.u32().ok_or_else(invalid)? } else { 0 };
        let bits = c.u8().ok_or_else(invalid)?;
        if bits > 32 {
            return Err(invalid());
        }
        let octets = c.take(usize::from(bits).div_ceil(8)).ok_or_else(invalid)?;
        let mut addr = [0u8; 4];
        addr[..octets.len()].copy_from_slice(octets);
        let net = Ipv4Net::new(Ipv4Addr::from(addr), bits).map_err(|_| invalid())?;
        out.push((net.trunc(), id));
    }
    Ok(out)
}

/// UPDATE (RFC 4271 §4.3 and the checks of §6.3).
fn update(body: &[u8], add_path: bool) -> Result<BgpMessage, Error> {
    let list = || update_error(1, "malformed attribute list");
    let mut c = Cursor(body);
    let withdrawn_len = usize::from(c.u16().ok_or_else(list)?);
    let withdrawn = prefixes(c.take(withdrawn_len).ok_or_else(list)?, add_path)?;
    let attrs_len = usize::from(c.u16().ok_or_else(list)?);
    let attrs = c.take(attrs_len).ok_or_else(list)?;
    let nlri = prefixes(c.0, add_path)?;
    let announced = if nlri.is_empty() {
        Vec::new()
    } else {
        let (a, next_hop) = path_attributes(attrs)?;
        let attrs = Arc::new(a);
        nlri.into_iter()
            .map(|(p, id)| {
                let path = Advertised {
                    id,
                    next_hop,
                    attrs: attrs.clone(),
                };
                (p, path)
            })
            .collect()
    };
    Ok(BgpMessage::Update {
        add_path,
        withdrawn,
        announced,
    })
}

/// The attributes but the NEXT_HOP, and the NEXT_HOP (`Advertised` keeps it beside them).
fn path_attributes(field: &[u8]) -> Result<(PathAttrs, Ipv4Addr), Error> {
    const OPTIONAL: u8 = 0x80;
    const EXTENDED_LENGTH: u8 = 0x10;
    let list = || update_error(1, "malformed attribute list");
    let length = |code: u8| update_error(5, format!("attribute length error (type {code})"));
    let mut c = Cursor(field);
    let mut seen = Vec::new();
    let (mut origin, mut as_path, mut next_hop, mut med, mut local_pref) = (None, None, None, None, None);
    while !c.is_empty() {
        let flags = c.u8().ok_or_else(list)?;
        let code = c.u8().ok_or_else(list)?;
        let len = if flags & EXTENDED_LENGTH != 0 {
            usize::from(c.u16().ok_or_else(list)?)
        } else {
            usize::from(c.u8().ok_or_else(list)?)
        };
        let value = c.take(len).ok_or_else(list)?;
        if seen.contains(&code) {
            return Err(update_error(1, format!("attribute type {code} appears twice")));
        }
        seen.push(code);
        let four = |v: &[u8]| <[u8; 4]>::try_from(v).map_err(|_| length(code));
        match code {
            1 => {
                origin = Some(match value {
                    [0] => BgpOrigin::Igp,
                    [1] => BgpOrigin::Egp,
                    [2] => BgpOrigin::Incomplete,
                    [o] => return Err(update_error(6, format!("invalid ORIGIN {o}"))),
                    _ => return Err(length(code)),
                })
            }
            2 => as_path = Some(path(value)?),
            3 => next_hop = Some(Ipv4Addr::from(four(value)?)),
            4 => med = Some(u32::from_be_bytes(four(value)?)),
            5 => local_pref = Some(u32::from_be_bytes(four(value)?)),
            _ if flags & OPTIONAL == 0 => {
                return Err(update_error(2, format!("unrecognized well-known attribute {code}")));
            }
            _ => {}
        }
    }
    let missing = |code: u8| update_error(3, format!("missing well-known attribute {code}"));
    let attrs = PathAttrs {
        origin: origin.ok_or_else(|| missing(1))?,
        as_path: as_path.ok_or_else(|| missing(2))?,
        med,
        local_pref,
    };
    Ok((attrs, next_hop.ok_or_else(|| missing(3))?))
}

/// AS_PATH of 4-octet ASNs (RFC 6793 §3): segments of type 1 (AS_SET) or 2 (AS_SEQUENCE).
fn path(value: &[u8]) -> Result<Vec<u32>, Error> {
    let malformed = || update_error(11, "malformed AS_PATH");
    let mut c = Cursor(value);
    let mut asns = Vec::new();
    while !c.is_empty() {
        let kind = c.u8().ok_or_else(malformed)?;
        let n = usize::from(c.u8().ok_or_else(malformed)?);
        if !(kind == 1 || kind == 2) || n == 0 {
            return Err(malformed());
        }
        for _ in 0..n {
            asns.push(c.u32().ok_or_else(malformed)?);
        }
    }
    Ok(asns)
}

#[cfg(test)]
mod tests;
