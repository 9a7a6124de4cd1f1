//! Generates the ExtMcp service (server, and the client the tests use) from agentgateway's
//! `proto/ext_mcp.proto`, vendored with its licence (proto/README.md says from which commit).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/ext_mcp.proto");
    let descriptors = protox::compile(["ext_mcp.proto"], ["proto"])?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .compile_fds(descriptors)?;
    Ok(())
}
