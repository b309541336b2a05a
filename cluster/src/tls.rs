//! Mutual TLS between nodes: each presents its certificate and accepts only
//! peers whose certificate the cluster's CA signed, whichever side dialled.

use std::path::Path;
use std::sync::Arc;

use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use tokio_rustls::rustls::sign::CertifiedKey;
use tokio_rustls::rustls::{ClientConfig, RootCertStore, ServerConfig};
use tokio_rustls::{TlsAcceptor, TlsConnector};

use crate::error::ClusterError;
use crate::options::TlsFiles;

/// Both sides of a node's TLS.
#[derive(Clone)]
pub(crate) struct Tls {
    pub(crate) acceptor: TlsAcceptor,
    pub(crate) connector: TlsConnector,
}

fn refuse(what: &'static str, path: &Path, reason: impl ToString) -> ClusterError {
    ClusterError::Tls {
        what,
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

fn certificates(
    what: &'static str,
    path: &Path,
) -> Result<Vec<CertificateDer<'static>>, ClusterError> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| refuse(what, path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| refuse(what, path, e))?;
    if certs.is_empty() {
        return Err(refuse(what, path, "no certificate in it"));
    }
    Ok(certs)
}

/// Whether `certificate` names `node` among its subject alternative names:
/// a DNS name equal to the node's name, or, for a node named by its
/// address (`IP:port`, the default), that IP. The common name is not
/// looked at (webpki, like browsers, matches names on SANs only).
pub(crate) fn names_node(certificate: &CertificateDer<'_>, node: &str) -> bool {
    let name = match node.parse::<std::net::SocketAddr>() {
        Ok(address) => ServerName::IpAddress(address.ip().into()),
        Err(_) => match ServerName::try_from(node) {
            Ok(name) => name,
            Err(_) => return false,
        },
    };
    webpki::EndEntityCert::try_from(certificate)
        .and_then(|cert| cert.verify_is_valid_for_subject_name(&name))
        .is_ok()
}

/// A TLS acceptor that takes no one: it has no certificate to offer. It is
/// what ractor_cluster's own listener (which mcpvisor does not use, see
/// `accept`) is given, so nothing that reaches it gets a session.
pub(crate) fn refusing() -> TlsAcceptor {
    #[derive(Debug)]
    struct NoCertificate;
    impl ResolvesServerCert for NoCertificate {
        fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
            None
        }
    }
    let config = ServerConfig::builder()
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(NoCertificate));
    TlsAcceptor::from(Arc::new(config))
}

/// Reads the node's certificate, key and CA.
pub(crate) fn load(files: &TlsFiles) -> Result<Tls, ClusterError> {
    let chain = certificates("certificate", &files.cert)?;
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| refuse("key", &files.key, e))?;
    let mut roots = RootCertStore::empty();
    for ca in certificates("CA", &files.ca)? {
        roots.add(ca).map_err(|e| refuse("CA", &files.ca, e))?;
    }
    let roots = Arc::new(roots);
    let verifier = WebPkiClientVerifier::builder(roots.clone())
        .build()
        .map_err(|e| refuse("CA", &files.ca, e))?;
    let server = ServerConfig::builder()
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain.clone(), key.clone_key())
        .map_err(|e| refuse("key", &files.key, e))?;
    let client = ClientConfig::builder()
        .with_root_certificates(roots)
        .with_client_auth_cert(chain, key)
        .map_err(|e| refuse("key", &files.key, e))?;
    Ok(Tls {
        acceptor: TlsAcceptor::from(Arc::new(server)),
        connector: TlsConnector::from(Arc::new(client)),
    })
}
