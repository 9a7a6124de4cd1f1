//! What the listener knows of its own traffic: requests in flight and bytes moving (`/readyz`,
//! idle connections closed), counted by guards that cannot be forgotten.

use super::*;

/// What a connection is doing, for its timeouts: requests in progress, when it last went idle,
/// and when the head of its next request began to arrive.
pub(super) struct Activity {
    state: Mutex<ActivityState>,
}

pub(super) struct ActivityState {
    busy: usize,
    idle_since: Instant,
    head_since: Option<Instant>,
}

impl Activity {
    pub(super) fn new() -> Activity {
        Activity {
            state: Mutex::new(ActivityState {
                busy: 0,
                idle_since: Instant::now(),
                head_since: None,
            }),
        }
    }

    /// Bytes arrived: with no request in progress, they are the next request's head.
    pub(super) fn read(&self) {
        let mut state = lock(&self.state);
        if state.busy == 0 && state.head_since.is_none() {
            state.head_since = Some(Instant::now());
        }
    }

    /// Whether the connection has broken one of its bounds.
    pub(super) fn overdue(&self, limits: &Limits) -> bool {
        let state = lock(&self.state);
        if state.busy > 0 {
            return false;
        }
        match state.head_since {
            Some(since) => since.elapsed() > limits.header_timeout,
            None => state.idle_since.elapsed() > limits.idle_timeout,
        }
    }
}

/// A request in progress on its connection, from its head until its answer's body is written
/// (or dropped).
pub(super) struct Busy(Arc<Activity>);

impl Busy {
    pub(super) fn begin(activity: &Arc<Activity>) -> Busy {
        let mut state = lock(&activity.state);
        state.busy += 1;
        state.head_since = None;
        drop(state);
        Busy(Arc::clone(activity))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let mut state = lock(&self.0.state);
        state.busy = state.busy.saturating_sub(1);
        if state.busy == 0 {
            state.idle_since = Instant::now();
        }
    }
}

/// A connection's stream, telling its [`Activity`] when bytes arrive.
pub(super) struct Watched {
    pub(super) inner: tokio::net::TcpStream,
    pub(super) activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(context, buf);
        if buf.filled().len() > before {
            self.activity.read();
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(context, buf)
    }

    fn poll_flush(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(context)
    }

    fn poll_shutdown(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(context)
    }
}

/// `body`, holding `guard` until it is written whole or dropped.
pub(super) fn tracked<G: Send + Sync + Unpin + 'static>(body: Body, guard: G) -> Body {
    struct Tracked<G> {
        body: Body,
        _guard: G,
    }
    impl<G: Unpin> hyper::body::Body for Tracked<G> {
        type Data = Bytes;
        type Error = Infallible;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            context: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
            Pin::new(&mut self.body).poll_frame(context)
        }
        fn is_end_stream(&self) -> bool {
            self.body.is_end_stream()
        }
        fn size_hint(&self) -> hyper::body::SizeHint {
            self.body.size_hint()
        }
    }
    BodyExt::boxed(Tracked {
        body,
        _guard: guard,
    })
}
