//! Mutual TLS between nodes: each presents its certificate and accepts only
//! peers whose certificate the cluster's CA signed, whichever side dialled.

use std::path::Path;
use std::sync::Arc;

use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
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
