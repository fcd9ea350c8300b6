//! `fabsim peer` against real speakers on loopback: a real BIRD 1.6 configured like the
//! seed lab's Calico node k-master (AS 65000, ADD-PATH, its pod block exported) takes k-master's
//! place on Leaf-1's session; and a hand-driven TCP client checks the OPEN errors.
//!
//! BIRD listens on its own loopback address and port (`listen bgp address … port …`), so it
//! never binds port 179, and has no kernel protocol, so it never touches the host's routes.
//! Only the processes the test started are killed (the fabsim child, BIRD's pid file), also
//! when an assertion fails. Without `bird` the BIRD test is skipped, unless
//! `FABSIM_BIRD=required` (CI sets it).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fabsim::engine::BgpMessage;
use fabsim::wire::bgp::encode;

const SCENARIO: &str = "scenarios/seed-lab.yaml";

/// A port on `addr` that was free a moment ago.
fn free_port(addr: Ipv4Addr) -> u16 {
    TcpListener::bind((addr, 0)).unwrap().local_addr().unwrap().port()
}

/// The processes this test started; killed on drop (also when the test fails).
struct Guard {
    fabsim: Option<Child>,
    bird_pid_file: Option<PathBuf>,
    dir: PathBuf,
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(pid) = self
            .bird_pid_file
            .as_ref()
            .and_then(|f| std::fs::read_to_string(f).ok())
            .and_then(|p| p.trim().parse::<u32>().ok())
        {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
        if let Some(c) = self.fabsim.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fabsim-peer-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `fabsim peer` on Leaf-1 at step s5, for the real speaker of AS `as_peer`.
fn peer_command(as_peer: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fabsim"));
    cmd.args([
        "peer",
        SCENARIO,
        "--step",
        "s5",
        "--device",
        "Leaf-1",
        "--as-peer",
        as_peer,
    ]);
    cmd
}

/// Start `fabsim peer` for Leaf-1's session with k-master (AS 65000) at step s5, where Leaf-1
/// also peers with k-w1 and so has routes of its own to advertise. Its stdout lines are
/// collected as they come.
fn start_fabsim(port: u16, duration_s: u64, guard: &mut Guard) -> Arc<Mutex<Vec<String>>> {
    let mut child = peer_command("65000")
        .args([
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--duration",
            &duration_s.to_string(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    guard.fabsim = Some(child);
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            sink.lock().unwrap().push(line);
        }
    });
    wait_for("fabsim to listen", Duration::from_secs(120), || {
        lines.lock().unwrap().iter().any(|l| l.starts_with("listening on"))
    });
    lines
}

fn wait_for(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn output(lines: &Arc<Mutex<Vec<String>>>) -> String {
    lines.lock().unwrap().join("\n")
}

fn birdc(sock: &Path, cmd: &str) -> String {
    let out = Command::new("birdc")
        .arg("-s")
        .arg(sock)
        .args(cmd.split(' '))
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn bird_installed() -> bool {
    if Command::new("bird").arg("--version").output().is_ok() {
        return true;
    }
    assert!(
        std::env::var("FABSIM_BIRD").as_deref() != Ok("required"),
        "FABSIM_BIRD=required but `bird` is not installed (apt-get install bird)"
    );
    eprintln!("skipped: `bird` is not installed (set FABSIM_BIRD=required to fail instead)");
    false
}

#[test]
fn real_bird_peers_with_the_simulated_leaf() {
    if !bird_installed() {
        return;
    }
    let dir = scratch("bird");
    let mut guard = Guard {
        fabsim: None,
        bird_pid_file: None,
        dir: dir.clone(),
    };
    let port = free_port(Ipv4Addr::LOCALHOST);
    let bird_addr = Ipv4Addr::new(127, 0, 0, 2);
    let bird_port = free_port(bird_addr);
    let lines = start_fabsim(port, 25, &mut guard);

    // k-master as Calico configures it (seed-lab.md s4): AS 65000, ADD-PATH both ways, its pod
    // block (a blackhole, as Calico's IPAM block route) exported with the node's address as
    // next hop. The TCP session runs on loopback; the BGP next hop is the node's fabric address.
    let conf = dir.join("bird.conf");
    std::fs::write(
        &conf,
        format!(
            "router id {bird_addr};\n\
             listen bgp address {bird_addr} port {bird_port};\n\
             protocol device {{ scan time 10; }}\n\
             protocol static pods {{ route 10.66.111.0/24 blackhole; }}\n\
             protocol bgp leaf1 {{\n\
               local as 65000;\n\
               neighbor 127.0.0.1 port {port} as 65011;\n\
               source address {bird_addr};\n\
               multihop;\n\
               add paths on;\n\
               connect delay time 1;\n\
               connect retry time 2;\n\
               import all;\n\
               export filter {{ if proto = \"pods\" then {{ bgp_next_hop = 10.0.11.1; accept; }} reject; }};\n\
             }}\n"
        ),
    )
    .unwrap();
    let sock = dir.join("bird.ctl");
    let pid_file = dir.join("bird.pid");
    guard.bird_pid_file = Some(pid_file.clone());
    let status = Command::new("bird")
        .arg("-c")
        .arg(&conf)
        .arg("-s")
        .arg(&sock)
        .arg("-P")
        .arg(&pid_file)
        .status()
        .unwrap();
    assert!(status.success(), "bird did not start");

    // The session reaches Established on both sides.
    wait_for("BIRD's session to be Established", Duration::from_secs(30), || {
        birdc(&sock, "show protocols leaf1").contains("Established")
    });
    wait_for("fabsim to report Established", Duration::from_secs(10), || {
        output(&lines).contains("session with 127.0.0.2") && output(&lines).contains("Established: router id 127.0.0.2")
    });

    // BIRD learns what the model says Leaf-1 advertises to k-master: every path fabsim sent
    // whose AS path does not hold BIRD's own AS (those BIRD drops as loops, RFC 4271 §9.1.2).
    wait_for("Leaf-1 to learn the pod block", Duration::from_secs(10), || {
        output(&lines).contains("Leaf-1 learned 10.66.111.0/24 from 10.0.11.1 (path id")
    });
    let text = output(&lines);
    let sent: Vec<(String, String)> = text
        .lines()
        .filter_map(|l| l.strip_prefix("sent announce "))
        .filter_map(|l| {
            let prefix = l.split(' ').next()?.to_string();
            let path = l.split("AS path ").nth(1)?.to_string();
            Some((prefix, path))
        })
        .filter(|(_, path)| !path.split(' ').any(|a| a == "65000"))
        .collect();
    assert!(
        sent.len() >= 3,
        "Leaf-1 should advertise k-w1's routes to k-master:\n{text}"
    );
    let routes = birdc(&sock, "show route all protocol leaf1");
    for (prefix, path) in &sent {
        assert!(
            routes.contains(prefix.as_str()),
            "BIRD did not learn {prefix}:\n{routes}"
        );
        assert!(
            routes.contains(&format!("BGP.as_path: {path}")),
            "BIRD has no {prefix} with AS path {path}:\n{routes}"
        );
    }
    assert!(routes.contains("BGP.next_hop: 10.0.11.0"), "{routes}");

    // The node's pod block in the simulated leaf's `show ip bgp` (printed before fabsim closes
    // the session), best, via the node, with the node's AS path.
    let mut child = guard.fabsim.take().unwrap();
    let status = child.wait().unwrap();
    assert!(status.success());
    let text = output(&lines);
    let show = text
        .split("Leaf-1# show ip bgp")
        .nth(1)
        .expect("fabsim printed Leaf-1's show ip bgp");
    assert!(
        show.lines().any(|l| l.starts_with(" * >")
            && l.contains("10.66.111.0/24")
            && l.contains("10.0.11.1")
            && l.trim_end().ends_with("65000 i")),
        "{show}"
    );
    // k-master's simulated speaker stood down on that session only.
    assert!(
        text.contains("session k-master -> 10.0.11.0: Active (Cease: administrative shutdown)"),
        "{text}"
    );
    assert!(!text.contains("session Leaf-1 -> 10.1.11.1: Active"), "{text}");
    // Reachability came back with the pod block (k-master's pod reachable again).
    assert!(
        text.contains("reach client -> default/test-web-master: restored"),
        "{text}"
    );
    assert!(text.contains("session with 127.0.0.2"), "{text}");
}

/// Read one BGP message from `s`.
fn read_message(s: &mut TcpStream) -> Vec<u8> {
    let mut head = [0u8; 19];
    s.read_exact(&mut head).unwrap();
    let len = usize::from(u16::from_be_bytes([head[16], head[17]]));
    let mut rest = vec![0u8; len - 19];
    s.read_exact(&mut rest).unwrap();
    [head.to_vec(), rest].concat()
}

#[test]
fn a_wrong_peer_as_is_refused_with_bad_peer_as() {
    let dir = scratch("bad-as");
    let mut guard = Guard {
        fabsim: None,
        bird_pid_file: None,
        dir,
    };
    let port = free_port(Ipv4Addr::LOCALHOST);
    let lines = start_fabsim(port, 15, &mut guard);
    let mut s = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // fabsim's OPEN: Leaf-1's AS 65011 (seed-lab.md) in the 4-octet AS capability.
    let open = read_message(&mut s);
    assert_eq!(open[18], 1);
    assert!(open.windows(6).any(|w| w == [65, 4, 0, 0, 0xfd, 0xf3]), "{open:?}");
    let wrong = BgpMessage::Open {
        asn: 65099,
        hold_s: 90,
        router_id: Ipv4Addr::new(127, 0, 0, 3),
        add_path_rx: false,
        add_path_tx: false,
    };
    s.write_all(&encode(&wrong)).unwrap();
    // RFC 4271 §6.2: NOTIFICATION, OPEN Message Error (2), Bad Peer AS (2).
    let n = read_message(&mut s);
    assert_eq!((n[18], n[19], n[20]), (3, 2, 2), "{n:?}");
    wait_for("fabsim to report the error", Duration::from_secs(5), || {
        output(&lines).contains("Bad peer AS 65099")
    });
}

#[test]
fn an_unknown_peer_as_is_a_usage_error_listing_the_neighbours() {
    let out = peer_command("64999")
        .args(["--listen", "127.0.0.1:0", "--duration", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no BGP neighbour with remote AS 64999"), "{err}");
    assert!(err.contains("10.0.11.1 (AS 65000)"), "{err}");
}
