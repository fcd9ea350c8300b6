//! `curl` and busybox `wget` against the servers workloads run (their image's catalogue
//! entry): the TCP connection goes through the data plane; what answers is the destination's
//! image.

use std::net::Ipv4Addr;

use chrono::{DateTime, Utc};

use crate::catalogue::{self, HttpServer};
use crate::dataplane::{probe, IcmpError, ProbeKind, ProbeOutcome};
use crate::engine::{local_iface, State};
use crate::model::{DeviceId, Network};
use crate::views::CommandError;

/// A URL's parts: its host, its port, its path, and its `HOST[:PORT]` as written (busybox wget
/// names the server by it).
struct Url {
    host: String,
    port: u16,
    path: String,
    hostport: String,
}

/// `http://HOST[:PORT][/PATH]`: HOST an address, or a name a pod resolves (`k8s::resolve_name`).
fn parse_url(url: &str) -> Result<Url, CommandError> {
    let bad = || {
        CommandError::new(format!(
            "fabsim: expected a URL like http://10.0.0.1[:80]/, found `{url}`"
        ))
    };
    let rest = url.strip_prefix("http://").ok_or_else(bad)?;
    let (hostport, path) = rest
        .split_once('/')
        .map_or((rest, "/".to_string()), |(h, p)| (h, format!("/{p}")));
    let (host, port) = match hostport.split_once(':') {
        Some((h, p)) => (h, p.parse().map_err(|_| bad())?),
        None => (hostport, 80),
    };
    if host.is_empty() {
        return Err(bad());
    }
    Ok(Url {
        host: host.to_string(),
        port,
        path,
        hostport: hostport.to_string(),
    })
}

/// The URL's host as an address: a dotted quad, else the name through the pod's resolver
/// (None: it does not resolve). A name where fabsim has no resolver is an error.
fn resolve(net: &Network, st: &State, dev: DeviceId, host: &str) -> Result<Option<Ipv4Addr>, CommandError> {
    if let Ok(ip) = host.parse() {
        return Ok(Some(ip));
    }
    crate::k8s::resolve_name(net, st, dev, host).map_err(CommandError::new)
}

/// Why a connection fails, as the TCP stack reports it.
enum Failure {
    Refused,
    Unreachable,
    TimedOut,
}

/// Connect from `dev` to `dst:port`; on success the HTTP server listening there. A Service's
/// ClusterIP is answered by the endpoint kube-proxy DNATed the connection to; its REJECT (no
/// endpoints) is an ICMP port unreachable, which the TCP stack reports as ECONNREFUSED.
fn connect(net: &Network, st: &State, dev: DeviceId, dst: Ipv4Addr, port: u16) -> Result<&'static HttpServer, Failure> {
    let p = probe(net, st, dev, dst, 64, ProbeKind::Tcp { dst_port: port }, 0);
    match p.outcome {
        ProbeOutcome::Reply { .. } => {}
        ProbeOutcome::Error {
            error: IcmpError::PortUnreachable,
            ..
        } => return Err(Failure::Refused),
        ProbeOutcome::LocalNoRoute | ProbeOutcome::Error { .. } => return Err(Failure::Unreachable),
        ProbeOutcome::Lost { .. } => return Err(Failure::TimedOut),
    }
    let (dst, port) = p
        .service_nat
        .as_ref()
        .map_or((dst, port), |n| (n.endpoint, n.target_port));
    let owner = (0..net.devices.len())
        .map(|d| DeviceId(d as u32))
        .find(|d| local_iface(net, st, *d, dst).is_some())
        .ok_or(Failure::TimedOut)?;
    let image = net
        .device(owner)
        .image
        .as_deref()
        .and_then(catalogue::image)
        .ok_or(Failure::Refused)?;
    image
        .servers
        .iter()
        .find(|s| s.port == port)
        .map(|s| &s.http)
        .ok_or(Failure::Refused)
}

/// `curl [-s] [-S] URL`: the body on success; curl's error line unless silenced.
pub(crate) fn curl(net: &Network, st: &State, dev: DeviceId, args: &[String]) -> Result<String, CommandError> {
    let mut silent = false;
    let mut show_errors = false;
    let mut url = None;
    for a in args {
        match a.as_str() {
            "-s" | "--silent" => silent = true,
            "-S" | "--show-error" => show_errors = true,
            "-sS" | "-Ss" => (silent, show_errors) = (true, true),
            o if o.starts_with('-') => {
                return Err(CommandError::new(format!(
                    "curl: option {o}: is not modelled by fabsim"
                )))
            }
            u => url = Some(u),
        }
    }
    let url = url.ok_or_else(|| CommandError::new("curl: no URL specified!"))?;
    let Url { host, port, path, .. } = parse_url(url)?;
    let Some(dst) = resolve(net, st, dev, &host)? else {
        if silent && !show_errors {
            return Ok(String::new());
        }
        return Ok(format!("curl: (6) Could not resolve host: {host}\n"));
    };
    match connect(net, st, dev, dst, port) {
        Ok(server) if path == "/" || path == server.path => Ok(server.body.clone()),
        Ok(_) => Ok(String::new()), // a 404 page is not modelled
        Err(f) if silent && !show_errors => {
            let _ = f;
            Ok(String::new())
        }
        Err(f) => {
            let (code, why) = match f {
                Failure::Refused => (7, "Connection refused"),
                Failure::Unreachable => (7, "Couldn't connect to server"),
                Failure::TimedOut => (28, "Connection timed out"),
            };
            Ok(format!(
                "curl: ({code}) Failed to connect to {dst} port {port} after 0 ms: {why}\n"
            ))
        }
    }
}

const HTTP_DATE: &str = "%a, %d %b %Y %H:%M:%S GMT";

/// Busybox `wget [-S] [-O FILE] URL` (the only wget in the catalogue's images).
pub(crate) fn wget(net: &Network, st: &State, dev: DeviceId, args: &[String]) -> Result<String, CommandError> {
    let show_headers = args.iter().any(|a| a == "-S");
    let url = args
        .iter()
        .find(|a| !a.starts_with('-'))
        .ok_or_else(|| CommandError::new("BusyBox wget: missing URL"))?;
    let Url {
        host,
        port,
        path,
        hostport,
    } = parse_url(url)?;
    // busybox resolves first (`xhost2sockaddr`: `bad address` and exit), then names the server
    // as the URL wrote it (`HOST[:PORT]`, wget.c's `server.host`) and the address it connects to.
    let Some(dst) = resolve(net, st, dev, &host)? else {
        return Ok(format!("wget: bad address '{hostport}'\n"));
    };
    let mut out = format!("Connecting to {hostport} ({dst}:{port})\n");
    let server = match connect(net, st, dev, dst, port) {
        Ok(s) if path == "/" || path == s.path => s,
        Ok(_) => return Ok(out + "wget: server returned error: HTTP/1.1 404 Not Found\n"),
        Err(Failure::Refused) => {
            return Ok(out + &format!("wget: can't connect to remote host ({dst}): Connection refused\n"))
        }
        Err(Failure::Unreachable) => {
            return Ok(out + &format!("wget: can't connect to remote host ({dst}): No route to host\n"))
        }
        Err(Failure::TimedOut) => return Ok(out + "wget: download timed out\n"),
    };
    let modified = DateTime::parse_from_rfc3339(&server.last_modified)
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_default();
    let size = server.body.len();
    if show_headers {
        // busybox prints each response header indented by two spaces (wget.c, -S).
        let headers = [
            "HTTP/1.1 200 OK".to_string(),
            format!("Server: {}", server.server),
            format!(
                "Date: {}",
                crate::views::clock::wall_clock(st.time_ms).format(HTTP_DATE)
            ),
            format!("Content-Type: {}", server.content_type),
            format!("Content-Length: {size}"),
            format!("Last-Modified: {}", modified.format(HTTP_DATE)),
            "Connection: close".to_string(),
            // nginx's ETag: hex modification time and hex size.
            format!("ETag: \"{:x}-{:x}\"", modified.timestamp(), size),
            "Accept-Ranges: bytes".to_string(),
        ];
        for h in headers {
            out.push_str(&format!("  {h}\n"));
        }
    }
    let file = server
        .path
        .rsplit('/')
        .next()
        .filter(|f| !f.is_empty())
        .unwrap_or("index.html");
    out.push_str(&format!("saving to '{file}'\n"));
    out.push_str(&format!(
        "{file:<20} 100% |{}| {size:>5}  0:00:00 ETA\n",
        "*".repeat(32)
    ));
    out.push_str(&format!("'{file}' saved\n"));
    Ok(out)
}
