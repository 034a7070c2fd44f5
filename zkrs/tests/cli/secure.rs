//! `zkrs` against secured servers: TLS (a secure client port requiring a client certificate,
//! keystores made now) and SASL DIGEST-MD5 (a JAAS `Server` section). Local java processes
//! (the settings force them).

use crate::common::run_command;
use integration_tests::pki::{ClientAuth, Pki};
use integration_tests::{ScratchDir, Server, Settings};

fn zkrs(connect: &str, args: &[&str]) -> tokio::process::Command {
    crate::common::command(connect, args)
}

#[tokio::test]
async fn tls_options_reach_a_secure_port_and_a_missing_client_certificate_fails() {
    let pki = Pki::new();
    let server = Server::launch_with(&pki.server_settings(ClientAuth::Need)).await;
    let secure = server.secure_addr().expect("a secure port").to_string();
    let ca = pki.ca_pem();
    let (cert, key) = pki.client_cert();
    let (ca, cert, key) = (
        ca.to_str().unwrap(),
        cert.to_str().unwrap(),
        key.to_str().unwrap(),
    );

    let out = run_command(zkrs(
        &secure,
        &[
            "--tls-ca",
            ca,
            "--tls-cert",
            cert,
            "--tls-key",
            key,
            "--json",
            "ls",
            "/",
        ],
    ))
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("zookeeper"), "{stdout}");

    // The server requires a client certificate: without one the command fails, with a
    // one-line error and a non-zero exit code.
    let out = run_command(zkrs(
        &secure,
        &["--tls-ca", ca, "--connect-timeout", "3s", "ls", "/"],
    ))
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
}

#[tokio::test]
async fn sasl_option_authenticates_and_a_wrong_password_is_not_authorized() {
    let dir = ScratchDir::new("zkrs-jaas");
    let jaas = dir.write(
        "jaas.conf",
        "Server {\n    org.apache.zookeeper.server.auth.DigestLoginModule required\n    user_bob=\"bob-secret\";\n};\n",
    );
    let settings = Settings::default()
        .with_jvm_flag(format!(
            "-Djava.security.auth.login.config={}",
            jaas.display()
        ))
        .with_config_line(
            "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
        );
    let server = Server::launch_with(&settings).await;
    let hosts = server.connect_string();

    let out = run_command(zkrs(&hosts, &["--sasl", "bob:bob-secret", "ls", "/"])).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = run_command(zkrs(
        &hosts,
        &["--sasl", "bob:wrong", "--connect-timeout", "3s", "ls", "/"],
    ))
    .await;
    assert_eq!(
        out.status.code(),
        Some(5),
        "exit 5 (not authorized): {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
