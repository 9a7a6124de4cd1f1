//! The routes for data other than tool results: closed by default, each opened by `--allow`.

toolgate_repo::choices! {
    /// A route for data other than tool results, closed unless `--allow` opens it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Route {
        /// `resources/*` and their notifications.
        Resources = "resources",
        /// `prompts/*` and their notification.
        Prompts = "prompts",
        /// `completion/complete`.
        Completions = "completions",
        /// `logging/setLevel` (upstream log messages always go to stderr).
        Logging = "logging",
        /// The upstream's `sampling/createMessage` requests to the host.
        Sampling = "sampling",
        /// The upstream's `elicitation/create` requests to the host.
        Elicitation = "elicitation",
        /// The upstream's `roots/list` requests to the host, and roots notifications.
        Roots = "roots",
        /// Task-augmented calls and `tasks/*`, gated: a task's result decided by its tool's contract.
        Tasks = "tasks",
    }
}

impl Route {
    /// The route a host request method belongs to.
    pub(crate) fn of_host_method(method: &str) -> Option<Route> {
        Some(match method {
            _ if method.starts_with("resources/") => Route::Resources,
            _ if method.starts_with("prompts/") => Route::Prompts,
            "completion/complete" => Route::Completions,
            "logging/setLevel" => Route::Logging,
            _ if method.starts_with("tasks/") => Route::Tasks,
            _ => return None,
        })
    }

    /// The route an upstream request method belongs to.
    pub(crate) fn of_upstream_method(method: &str) -> Option<Route> {
        Some(match method {
            "sampling/createMessage" => Route::Sampling,
            "elicitation/create" => Route::Elicitation,
            "roots/list" => Route::Roots,
            _ => return None,
        })
    }

    /// The capability key it corresponds to (server-side routes in the server's capabilities,
    /// client-side ones in the client's).
    pub(crate) fn capability(self) -> &'static str {
        match self {
            Route::Resources => "resources",
            Route::Prompts => "prompts",
            Route::Completions => "completions",
            Route::Logging => "logging",
            Route::Sampling => "sampling",
            Route::Elicitation => "elicitation",
            Route::Roots => "roots",
            Route::Tasks => "tasks",
        }
    }

    pub(crate) fn is_client_side(self) -> bool {
        matches!(self, Route::Sampling | Route::Elicitation | Route::Roots)
    }
}
