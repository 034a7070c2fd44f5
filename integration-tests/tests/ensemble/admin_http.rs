//! `zk_client::admin::AdminServer` (feature `admin-http`) against a real server with its
//! AdminServer (Jetty) enabled: the same answers as the four-letter words, over HTTP/JSON.

use std::time::Duration;

use integration_tests::{Server as ZkServer, Settings};
use zk_client::admin::{AdminError, AdminServer, Mode, Server};
use zk_client::{Client, CreateOptions};

#[tokio::test]
async fn admin_server_commands_match_the_four_letter_words() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap();
    let settings = Settings::default()
        .with_config_line("admin.enableServer=true")
        .with_config_line("admin.serverAddress=127.0.0.1")
        .with_config_line(format!("admin.serverPort={port}"));
    let zk = ZkServer::launch_with(&settings).await;
    let client = Client::connect(&zk.connect_string()).await.unwrap();
    client
        .create("/admin-http", b"x", &CreateOptions::ephemeral())
        .await
        .unwrap();
    let admin = AdminServer::new(format!("127.0.0.1:{port}")).timeout(Duration::from_secs(10));
    // Jetty may come up a little after the client port.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while let Err(e) = admin.ruok().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "AdminServer not answering: {e}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let http = admin.mntr().await.unwrap();
    let words = Server::new(zk.connect_string()).mntr().await.unwrap();
    assert_eq!(http.mode, Mode::Standalone);
    assert_eq!(http.mode, words.mode);
    assert_eq!(http.version, words.version);
    assert_eq!(http.znode_count, words.znode_count);
    assert_eq!(http.ephemerals_count, 1);
    assert!(http.alive_connections >= 1);
    assert!(!admin.isro().await.unwrap());

    // Any command as JSON: the connections list our session.
    let cons = admin.command("cons").await.unwrap();
    let text = cons.to_string();
    assert!(
        text.contains(&format!("{}", client.session_id()))
            || text.contains(&format!("{:x}", client.session_id())),
        "{text}"
    );
    let conf = admin.command("conf").await.unwrap();
    assert_eq!(
        conf["client_port"].as_u64(),
        Some(u64::from(zk.addr().port())),
        "{conf}"
    );

    // Unknown commands and bad names are named errors.
    assert!(matches!(
        admin.command("no_such_command").await,
        Err(AdminError::Unknown { .. })
    ));
    assert!(matches!(
        admin.command("../x").await,
        Err(AdminError::InvalidCommand(_))
    ));
    // Nothing listens: unreachable.
    let nobody = AdminServer::new("127.0.0.1:1");
    assert!(nobody.ruok().await.unwrap_err().is_unreachable());
    client.close().await.unwrap();
}
