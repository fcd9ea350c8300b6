//! Input: text → model. Topology YAML, EOS configuration, netplan, BIRD configuration, FRR configuration,
//! containerlab topologies and snapshot directories. Every error and warning
//! carries a span (file, line, column). Parsers never compute routing.

pub mod bird;
mod cluster;
pub mod containerlab;
pub mod eos;
pub mod frr;
pub mod netplan;
pub mod snapshot;
pub mod topology;

/// The most fabsim reads of one input file. The largest real configuration it is meant for
/// (a 5,000-line EOS file, a containerlab lab's YAML) is well under 1 MiB; the bound stops a
/// 100 MB file, or a bind pointing at `/dev/zero`, from exhausting memory (issue #11).
pub const MAX_INPUT_BYTES: u64 = 16 << 20;

/// Why an input file could not be read, and where: a UTF-8 error has the line and column of
/// its first bad byte; other errors are at 1:1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadError {
    pub line: u32,
    pub col: u32,
    pub message: String,
}

/// Reads an input file as UTF-8 text, at most `MAX_INPUT_BYTES` (through `take`, so a
/// character device or a FIFO that never ends is cut off instead of read forever).
pub fn read_text(path: &std::path::Path) -> Result<String, ReadError> {
    use std::io::Read;
    let at_start = |message: String| ReadError {
        line: 1,
        col: 1,
        message,
    };
    let file = std::fs::File::open(path).map_err(|e| at_start(e.to_string()))?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(at_start("is a directory, not a file".into()));
    }
    let mut bytes = Vec::new();
    file.take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| at_start(e.to_string()))?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(at_start(format!(
            "the file is larger than {} MiB, the most fabsim reads of one input",
            MAX_INPUT_BYTES >> 20
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        let good = e.as_bytes().get(..e.utf8_error().valid_up_to()).unwrap_or_default();
        let line = good.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = good.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        // The column counts characters, as every other diagnostic's does.
        let col = String::from_utf8_lossy(good.get(line_start..).unwrap_or_default())
            .chars()
            .count()
            + 1;
        let byte = e.as_bytes().get(good.len()).copied().unwrap_or_default();
        ReadError {
            line: u32::try_from(line).unwrap_or(u32::MAX),
            col: u32::try_from(col).unwrap_or(u32::MAX),
            message: format!("invalid UTF-8 (byte 0x{byte:02x}); fabsim reads UTF-8 text"),
        }
    })
}

/// A config applier's guard: `dev` must be a device of `net` (an internal error otherwise,
/// pointed at the start of the text it was asked to apply).
pub(crate) fn check_device(
    net: &crate::model::Network,
    dev: crate::model::DeviceId,
    origin: &crate::diag::TextOrigin,
) -> Result<(), crate::diag::InputError> {
    if dev.idx() >= net.devices.len() {
        let msg = format!("internal: device id {} does not exist", dev.0);
        return Err(crate::diag::Diagnostic::error(origin.span_at(0, 0), msg).into());
    }
    Ok(())
}

/// Parse a duration like `40s`, `500ms`, `2m`, `1h`, or several such terms as kubectl prints
/// ages (`4m6s`, `1h30m`).
pub fn parse_duration(s: &str) -> Option<u64> {
    let mut rest = s.trim();
    let mut total: u64 = 0;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let split = rest.find(|c: char| !c.is_ascii_digit())?;
        let (num, after) = rest.split_at(split);
        let n: u64 = num.parse().ok()?;
        let unit_len = after.find(|c: char| c.is_ascii_digit()).unwrap_or(after.len());
        let (unit, next) = after.split_at(unit_len);
        let mult = match unit {
            "ms" => 1,
            "s" => 1000,
            "m" => 60_000,
            "h" => 3_600_000,
            _ => return None,
        };
        total = total.checked_add(n.checked_mul(mult)?)?;
        rest = next;
    }
    Some(total)
}

/// Go's `time.ParseDuration` for what users write (`90s`, `5m`, `1h30m`, `500ms`): a bare `0`
/// is the one unitless duration Go accepts; the rest is [`parse_duration`].
pub fn parse_go_duration(s: &str) -> Option<u64> {
    if s.trim() == "0" {
        return Some(0);
    }
    parse_duration(s)
}
