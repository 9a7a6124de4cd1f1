//! The folder store: what every store does, and nothing left behind.

mod common;

use toolgate_store::FolderStore;

#[test]
fn a_folder_behaves_as_every_store_and_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = FolderStore::open(&dir.path().join("store")).unwrap();
    common::behaves_as_a_store(&store);
    let left: Vec<_> = std::fs::read_dir(dir.path().join("store/job_status"))
        .unwrap()
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
