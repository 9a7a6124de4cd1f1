//! `--metrics ADDR`: the scrape endpoint of a front that has no HTTP listener of its own (the
//! stdio proxy, `toolgate serve`), or that keeps metrics off the port its callers reach. `GET
//! /metrics` answers the exposition; every other request gets 404 or 405. It runs on a thread
//! of its own with a runtime of its own, so a scrape never waits on a call, nor a call on a
//! scrape; it holds at most [`MAX_CONNECTIONS`] connections, each of which must send its
//! request head within [`HEAD_TIMEOUT`].

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{ACCEPT, ALLOW, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};

use crate::metrics::Metrics;

/// The scrape path.
pub const METRICS_PATH: &str = "/metrics";

/// The most scrapers served at once; one more waits for a free slot.
pub const MAX_CONNECTIONS: usize = 16;

/// How long a scraper may take to send its request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// The answer to `request` on the scrape endpoint: the exposition for `GET /metrics` (as the
/// scraper's `Accept` asks), 405 for another method there, 404 elsewhere.
pub fn scrape_response<B>(metrics: &Metrics, request: &Request<B>) -> Response<Full<Bytes>> {
    if request.uri().path() != METRICS_PATH {
        return plain(
            StatusCode::NOT_FOUND,
            "not found: metrics are at /metrics\n",
        );
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "GET /metrics\n");
        response
            .headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    let accept = request
        .headers()
        .get(ACCEPT)
        .and_then(|value| value.to_str().ok());
    let (media, text) = metrics.exposition_for(accept);
    let mut response = Response::new(Full::new(Bytes::from(text)));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(media));
    response
}

fn plain(status: StatusCode, text: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// A scrape endpoint serving on a thread of its own for the life of the process.
#[derive(Debug)]
pub struct MetricsEndpoint {
    address: SocketAddr,
}

impl MetricsEndpoint {
    /// Binds `address` now (a taken port is the caller's configuration error) and serves
    /// `metrics` there from a thread of its own.
    pub fn start(address: SocketAddr, metrics: Arc<Metrics>) -> Result<MetricsEndpoint, String> {
        let listener = std::net::TcpListener::bind(address)
            .and_then(|listener| listener.set_nonblocking(true).map(|()| listener))
            .map_err(|error| format!("cannot serve metrics on {address}: {error}"))?;
        let bound = listener
            .local_addr()
            .map_err(|error| format!("cannot serve metrics on {address}: {error}"))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|error| format!("cannot start the metrics endpoint: {error}"))?;
        std::thread::Builder::new()
            .name("toolgate-metrics".to_owned())
            .spawn(move || runtime.block_on(serve(listener, metrics)))
            .map_err(|error| format!("cannot start the metrics endpoint: {error}"))?;
        Ok(MetricsEndpoint { address: bound })
    }

    /// The address it serves on (the port chosen, for port 0).
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Where a scraper finds the metrics: `http://ADDR/metrics`.
    pub fn url(&self) -> String {
        format!("http://{}{METRICS_PATH}", self.address)
    }
}

async fn serve(listener: std::net::TcpListener, metrics: Arc<Metrics>) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok(permit) = Arc::clone(&slots).acquire_owned().await else {
            return;
        };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                // Out of descriptors, say: wait rather than spin.
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let metrics = Arc::clone(&metrics);
        tokio::spawn(async move {
            let service =
                hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
                    let response = scrape_response(&metrics, &request);
                    async move { Ok::<_, Infallible>(response) }
                });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEAD_TIMEOUT)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            // A scraper that holds its connection idle past a minute is let go.
            let _ = tokio::time::timeout(Duration::from_secs(60), connection).await;
            drop(permit);
        });
    }
}
