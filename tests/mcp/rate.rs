//! `--caller-rate-store`: one caller's rate held across replicas through a real Redis
//! (`redis-server`, Debian's package, which `.ci/run` installs; `cargo test` skips this, saying
//! so, where it is not installed, unless TOOLGATE_REQUIRE_REDIS=1), and what the limit does when
//! the store goes away.

use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use libtest_mimic::Failed;
use serde_json::json;

use super::http::Running;
use super::listener::{answer_of, eventually, modern_call, proxy, scenario, weather};

/// `redis-server` on a free port of loopback, with nothing kept on disk; `None` where it is
/// not installed (and not required).
fn redis_server(dir: &Path) -> Result<Option<(Running, u16)>, Failed> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let started = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let child = match started {
        Ok(child) => child,
        Err(_) if std::env::var("TOOLGATE_REQUIRE_REDIS").as_deref() != Ok("1") => {
            eprintln!(
                "mcp::rate: redis-server is not installed; the shared rate limit is not tested here (.ci/run tests it)"
            );
            return Ok(None);
        }
        Err(error) => {
            return Err(format!("TOOLGATE_REQUIRE_REDIS=1 but redis-server: {error}").into());
        }
    };
    let running = Running(child);
    let up = eventually(Duration::from_secs(10), || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    if !up {
        return Err("redis-server did not start".into());
    }
    Ok(Some((running, port)))
}

/// Three replicas with `--caller-rate 10/m` in one Redis hold one caller (its address) to 10 a
/// minute together: of 60 requests sent across them, no more than the burst and what refilled
/// meanwhile (one every 6 s, and one more) pass, where three buckets of their own would pass 30. Then the store goes away: the limit fails closed (503), or, asked, falls back
/// to each replica's own bucket; and a store nobody can reach at start is a configuration error.
pub(crate) fn three_replicas_hold_a_caller_to_one_shared_rate() -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let Some((mut redis, port)) = redis_server(dir.path())? else {
        return Ok(());
    };
    let store = format!("redis://127.0.0.1:{port}");
    let scenario = scenario(
        dir.path(),
        json!({}),
        json!({"weather": vec![weather("Lisbon"); 100]}),
    );
    let log = dir.path().join("log");
    let mut replicas = Vec::new();
    for unavailable in ["closed", "closed", "local"] {
        replicas.push(proxy(
            &[
                "--caller-rate",
                "10/m",
                "--caller-rate-store",
                &store,
                "--caller-rate-unavailable",
                unavailable,
            ],
            &scenario,
            &log,
        )?);
    }
    let status = |address: &str, id: u64| {
        let answer = answer_of(address, &modern_call(id, "Lisbon", false));
        answer.split(' ').nth(1).unwrap_or_default().to_owned()
    };
    let started = Instant::now();
    let statuses: Vec<String> = (0..60)
        .map(|id| status(&replicas[id % 3].1, id as u64))
        .collect();
    let took = started.elapsed().as_secs_f64();
    let passed = statuses.iter().filter(|status| *status == "200").count();
    let allowed = 10 + (took / 6.0).ceil() as usize + 1;
    if passed < 10 || passed > allowed || statuses.iter().any(|s| s != "200" && s != "429") {
        return Err(format!(
            "{passed} of 60 passed in {took:.2}s (at most {allowed}): {statuses:?}"
        )
        .into());
    }
    // The store goes away.
    drop(redis.0.kill());
    let _ = redis.0.wait();
    std::thread::sleep(Duration::from_millis(1200));
    let closed = status(&replicas[0].1, 100);
    let local = status(&replicas[2].1, 101);
    if closed != "503" || local != "200" {
        return Err(format!("without the store: closed {closed}, local {local}").into());
    }
    // A store nobody can reach at start.
    let output = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["mcp-proxy", "--root"])
        .arg(super::here())
        .args([
            "--listen",
            "127.0.0.1:0",
            "--caller-rate",
            "10/s",
            "--caller-rate-store",
        ])
        .arg(&store)
        .args(["--", "true"])
        .output()?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if output.status.code() != Some(2) || !stderr.contains("cannot connect") {
        return Err(format!(
            "an unreachable store at start: {:?} {stderr}",
            output.status
        )
        .into());
    }
    Ok(())
}
