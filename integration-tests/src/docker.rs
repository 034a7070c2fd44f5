//! Docker backend: one testcontainers container per server, on the host network.

use std::sync::Arc;
use std::time::Duration;

use bollard::Docker;
use testcontainers::core::WaitFor;
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, GenericImage, ImageExt};
use tokio::sync::OnceCell;

use crate::config::NodeSpec;
use crate::runtime::{self, block_on_bg, on_bg, Reap};

/// The socket `scripts/docker-up.sh` creates; used when `DOCKER_HOST` is unset and it exists.
pub(crate) const PROJECT_DOCKER_SOCKET: &str = "/tmp/zkrs-docker/docker.sock";

/// One server container. Dropping it removes the container.
#[derive(Debug)]
pub(crate) struct DockerNode {
    container: Option<Arc<ContainerAsync<GenericImage>>>,
    id: String,
}

fn how_to_fix() -> &'static str {
    "run the tests with `bash scripts/test.sh` (starts a loopback-only docker daemon and builds \
     the image), or run `scripts/docker-up.sh` and `scripts/build-zk-image.sh` first, or set \
     ZK_HARNESS=process to run servers as local java processes"
}

/// The bollard client of the harness runtime, after checking that the engine answers and that
/// `image` exists locally (so testcontainers never tries to pull it).
async fn engine(image: String) -> &'static Docker {
    static ENGINE: OnceCell<Docker> = OnceCell::const_new();
    ENGINE
        .get_or_init(|| async move {
            if std::env::var_os("DOCKER_HOST").is_none()
                && std::path::Path::new(PROJECT_DOCKER_SOCKET).exists()
            {
                // Before any docker client reads it; Rust's env access is serialized.
                std::env::set_var("DOCKER_HOST", format!("unix://{PROJECT_DOCKER_SOCKET}"));
            }
            let host = std::env::var("DOCKER_HOST").unwrap_or_else(|_| "(default socket)".into());
            let docker = Docker::connect_with_defaults().unwrap_or_else(|e| {
                panic!(
                    "no docker engine at DOCKER_HOST={host}: {e}; {}",
                    how_to_fix()
                )
            });
            match tokio::time::timeout(Duration::from_secs(10), docker.ping()).await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => {
                    panic!(
                        "no docker engine at DOCKER_HOST={host}: {e}; {}",
                        how_to_fix()
                    )
                }
                Err(_) => panic!(
                    "docker engine at {host} did not answer in 10 s; {}",
                    how_to_fix()
                ),
            }
            if let Err(e) = docker.inspect_image(&image).await {
                panic!(
                    "docker image {image} is not available locally ({e}); the harness never pulls: \
                     {}; with ZK_IMAGE set, `docker pull` that image first",
                    how_to_fix()
                );
            }
            docker
        })
        .await
}

/// Splits `name[:tag]` (a registry host may carry a port: `host:5000/zk:3.9`).
fn split_image(image: &str) -> (&str, &str) {
    match image.rsplit_once(':') {
        Some((name, tag)) if !tag.contains('/') => (name, tag),
        _ => (image, "latest"),
    }
}

impl DockerNode {
    /// Creates and starts the container of `spec` (without waiting for the server to serve).
    pub(crate) async fn launch(spec: NodeSpec, image: String) -> DockerNode {
        on_bg(async move {
            engine(image.clone()).await;
            let (name, tag) = split_image(&image);
            let mut request = GenericImage::new(name, tag)
                .with_wait_for(WaitFor::Nothing)
                .with_network("host")
                .with_label("zkrs.harness", "1");
            // scripts/test.sh removes the containers of its own run by this label.
            if let Ok(run) = std::env::var("ZKRS_RUN_ID") {
                request = request.with_label("zkrs.run", run);
            }
            for (k, v) in spec.docker_env() {
                request = request.with_env_var(k, v);
            }
            let container = request
                .start()
                .await
                .unwrap_or_else(|e| panic!("starting a {image} container failed: {e}"));
            let id = container.id().to_owned();
            runtime::register(Reap::Container(&id));
            DockerNode {
                container: Some(Arc::new(container)),
                id,
            }
        })
        .await
    }

    fn container(&self) -> Arc<ContainerAsync<GenericImage>> {
        Arc::clone(
            self.container
                .as_ref()
                .expect("container is present until drop"),
        )
    }

    /// SIGKILL (no shutdown hooks: a crash).
    pub(crate) async fn kill(&self) {
        let id = self.id.clone();
        // Already down (e.g. an earlier attempt went through): the goal holds.
        self.retried("kill", Some("is not running"), move || {
            let id = id.clone();
            async move { engine(String::new()).await.kill_container(&id, None).await }
        })
        .await;
    }

    /// SIGTERM, then SIGKILL after 10 s.
    pub(crate) async fn stop(&self) {
        let c = self.container();
        self.retried("stop", None, move || {
            let c = Arc::clone(&c);
            async move { c.stop_with_timeout(Some(10)).await }
        })
        .await;
    }

    /// Starts the stopped container again (same data directory).
    pub(crate) async fn start(&self) {
        let c = self.container();
        self.retried("start", None, move || {
            let c = Arc::clone(&c);
            async move { c.start().await }
        })
        .await;
    }

    /// Freezes the server (cgroup freezer): connects still succeed, nothing is answered.
    pub(crate) async fn pause(&self) {
        let c = self.container();
        self.retried("pause", Some("already paused"), move || {
            let c = Arc::clone(&c);
            async move { c.pause().await }
        })
        .await;
    }

    /// Undoes [`pause`](Self::pause).
    pub(crate) async fn resume(&self) {
        let c = self.container();
        self.retried("unpause", Some("is not paused"), move || {
            let c = Arc::clone(&c);
            async move { c.unpause().await }
        })
        .await;
    }

    /// Runs `op` on the harness runtime up to [`DOCKER_ATTEMPTS`] times,
    /// [`DOCKER_RETRY_PAUSE`] apart; an error whose text contains `reached` means the goal
    /// already holds. Panics with every error if no attempt succeeds.
    async fn retried<F, Fut, E>(&self, what: &'static str, reached: Option<&'static str>, op: F)
    where
        F: Fn() -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<(), E>> + Send,
        E: std::fmt::Display,
    {
        let id = self.id.clone();
        on_bg(async move {
            let mut errors = Vec::new();
            for attempt in 1..=DOCKER_ATTEMPTS {
                let error = match op().await {
                    Ok(()) => None,
                    Err(e) => {
                        Some(e.to_string()).filter(|e| !reached.is_some_and(|r| e.contains(r)))
                    }
                };
                let Some(error) = error else {
                    if !errors.is_empty() {
                        eprintln!("docker {what} {id}: done at attempt {attempt} after {errors:?}");
                    }
                    return;
                };
                errors.push(error);
                if attempt < DOCKER_ATTEMPTS {
                    tokio::time::sleep(DOCKER_RETRY_PAUSE).await;
                }
            }
            panic!("docker {what} {id}: failed {DOCKER_ATTEMPTS} times: {errors:?}");
        })
        .await;
    }

    /// The container's output so far (the server log).
    pub(crate) async fn logs(&self) -> String {
        let c = self.container();
        on_bg(async move {
            let out = c.stdout_to_vec().await.unwrap_or_default();
            let err = c.stderr_to_vec().await.unwrap_or_default();
            format!(
                "{}{}",
                String::from_utf8_lossy(&out),
                String::from_utf8_lossy(&err)
            )
        })
        .await
    }
}

impl Drop for DockerNode {
    fn drop(&mut self) {
        if let Some(c) = self.container.take() {
            let id = self.id.clone();
            // testcontainers removes the container in its own Drop, which needs a runtime: do it
            // on the harness runtime and wait a bounded time so the next test starts clean.
            block_on_bg(Duration::from_secs(20), async move {
                drop(c);
                runtime::forget(Reap::Container(&id));
            });
        }
    }
}

/// Attempts of one docker operation before the test fails: the engine has been seen to fail
/// a call now and then on a loaded 2-core machine (CI runs four tests per binary at once).
const DOCKER_ATTEMPTS: u32 = 3;
const DOCKER_RETRY_PAUSE: Duration = Duration::from_millis(500);
