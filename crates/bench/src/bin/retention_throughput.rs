//! How many records a second the retainer keeps in an S3-compatible store that adds a fixed
//! delay to every `PUT` (BENCHMARKS.md, "Retention that keeps up"): a TCP proxy in front of the
//! server holds each `PUT` back, as a distant endpoint does; RECORDS refusals are offered at
//! once, and the time until the last is written is measured.
//!
//! ENDPOINT `sink` is a server of the benchmark's own that takes every `PUT` at once (and lists
//! an empty bucket): moto, the S3-compatible test server, answers some 350 `PUT`s a second on
//! this machine whatever the client does, so it cannot show what the retainer itself keeps up
//! with.
//!
//! ```sh
//! crates/bench/retention_throughput.sh            # starts moto, as .ci/run does
//! retention_throughput ENDPOINT|sink BUCKET [RECORDS] [DELAY_MS]
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolgate_gate::{Contract, ContractSource, Request, Response, RetentionPolicy};
use toolgate_store::{Retainer, RetentionOptions, S3Store};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(endpoint), Some(bucket)) = (args.first(), args.get(1)) else {
        eprintln!("usage: retention_throughput ENDPOINT BUCKET [RECORDS] [DELAY_MS]");
        std::process::exit(2);
    };
    let records: usize = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(3_000);
    let delay = Duration::from_millis(args.get(3).and_then(|n| n.parse().ok()).unwrap_or(40));
    let upstream: SocketAddr = if endpoint == "sink" {
        sink()
    } else {
        endpoint
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .parse()
            .expect("ENDPOINT is http://IP:PORT or sink")
    };
    let slow = delaying_proxy(upstream, delay);
    let prefix = format!(
        "throughput-{}",
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos()
    );
    let store =
        S3Store::open(bucket, &prefix, Some(&format!("http://{slow}"))).expect("the store opens");
    let log: toolgate_store::Log = Arc::new(|line: &str| eprintln!("{line}"));
    let retainer = Retainer::start(
        Box::new(store),
        RetentionOptions {
            policy: RetentionPolicy::new(0.0),
            queue: records,
            ..RetentionOptions::default()
        },
        log,
    );
    let contract = weather();
    let now = SystemTime::now();
    let offers: Vec<(Vec<u8>, Request)> = (0..records)
        .map(|index| {
            let raw = format!(
                r#"{{"city":"Lisbon","conditions":"clear","note":"{index}","temperature_c":21.5}}"#
            )
            .into_bytes();
            (
                raw,
                Request::new(format!("r{index}")).with_context("city", "Lisbon"),
            )
        })
        .collect();
    let started = Instant::now();
    for (raw, request) in &offers {
        let decision = contract.admit(raw, request, now);
        assert!(!decision.is_admitted(), "each record is a refusal");
        retainer.offer(&decision, &Response::body(raw), request);
    }
    let written = retainer.flush(Duration::from_secs(600));
    let took = started.elapsed();
    let stats = retainer.stats();
    println!(
        "{} records kept in {:.2} s with {} ms per PUT: {:.0} records/s ({} dropped, {} failed{})",
        stats.kept,
        took.as_secs_f64(),
        delay.as_millis(),
        stats.kept as f64 / took.as_secs_f64(),
        stats.dropped,
        stats.failed,
        if written { "" } else { ", not all written" }
    );
}

/// The weather contract of the MCP tests.
fn weather() -> Contract {
    let folder =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/contracts/weather/v1");
    Contract::compile(&ContractSource::read_dir(folder).expect("the contract reads"))
        .expect("the contract compiles")
}

/// A TCP proxy in front of `upstream` holding every request that starts `PUT ` back `delay`:
/// its address.
fn delaying_proxy(upstream: SocketAddr, delay: Duration) -> SocketAddr {
    serve_each(move |client| relay(client, upstream, delay))
}

/// A loopback port whose every connection `serve` handles, on a runtime of its own on a thread
/// of its own: its address.
fn serve_each<F>(serve: impl Fn(tokio::net::TcpStream) -> F + Send + 'static) -> SocketAddr
where
    F: Future<Output = ()> + Send + 'static,
{
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let address = listener.local_addr().expect("bound");
    listener.set_nonblocking(true).expect("non-blocking");
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("the listener");
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream));
            }
        });
    });
    address
}

async fn relay(client: tokio::net::TcpStream, upstream: SocketAddr, delay: Duration) {
    let Ok(server) = tokio::net::TcpStream::connect(upstream).await else {
        return;
    };
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let requests = async move {
        let mut buffer = vec![0u8; 64 * 1024];
        while let Ok(read) = client_read.read(&mut buffer).await {
            if read == 0 {
                break;
            }
            if buffer[..read].starts_with(b"PUT ") {
                tokio::time::sleep(delay).await;
            }
            if server_write.write_all(&buffer[..read]).await.is_err() {
                break;
            }
        }
        let _ = server_write.shutdown().await;
    };
    let answers = async move {
        let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
    };
    tokio::join!(requests, answers);
}

/// An endpoint that takes every `PUT` at once, lists an empty bucket and deletes nothing: the
/// store's side of the benchmark without a server's own limits.
fn sink() -> SocketAddr {
    serve_each(|stream| async move {
        let service = hyper::service::service_fn(
            |request: hyper::Request<hyper::body::Incoming>| async move {
                use http_body_util::BodyExt;
                let method = request.method().clone();
                let _ = request.into_body().collect().await;
                let response = if method == hyper::Method::GET {
                    hyper::Response::builder()
                                .header("content-type", "application/xml")
                                .body(http_body_util::Full::new(bytes::Bytes::from_static(
                                    br#"<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>evidence</Name><Prefix></Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated></ListBucketResult>"#,
                                )))
                } else {
                    hyper::Response::builder()
                        .header("etag", "\"0\"")
                        .body(http_body_util::Full::new(bytes::Bytes::new()))
                };
                Ok::<_, std::convert::Infallible>(response.expect("a response"))
            },
        );
        let _ = hyper::server::conn::http1::Builder::new()
            .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
            .await;
    })
}
