//! A description split over files (`$ref: ./schemas/pet.yaml`, `../common.yaml#/Error`) made one
//! document, as a bundler does: every file such a reference names is read once and placed under
//! [`EXTERNAL`] in the description, and each reference rewritten to point there, so the rest of
//! `toolgate new` reads one document and follows its references as internal ones.
//!
//! A description is input from whoever wrote it: a file is read only inside the description's
//! own folder (after symbolic links are resolved), never a hidden one (a part of its path that
//! begins with `.`: `.env`, `.git/`), each no larger than a description may be, at most
//! [`MAX_FILES`] of them and [`MAX_TOTAL_BYTES`] in all; a URL is never fetched. A file is placed
//! only if it is a JSON or YAML mapping (as a schema, a components file or an OpenAPI document
//! is); and the converter copies from it only what is a schema. A reference this does not follow
//! is left as it is, and the converter then refuses the value it names and says so.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

/// Where the files a description refers to are placed in it.
pub const EXTERNAL: &str = "x-toolgate-external";
/// The most files one description may pull in.
pub const MAX_FILES: usize = 256;
/// The most bytes they may hold together.
pub const MAX_TOTAL_BYTES: u64 = 64 << 20;

/// One reference the bundle did not follow, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unfollowed {
    /// The file that holds the reference (relative to the description's folder).
    pub file: String,
    /// The reference as written.
    pub reference: String,
    /// Why it was not followed.
    pub why: String,
}

/// `description` (read from `path`) with every file its references name placed in it; the
/// references not followed, each with the reason.
pub fn bundle(
    mut description: Value,
    path: &Path,
    read: impl Fn(&Path) -> Result<Value, String>,
) -> Result<(Value, Vec<Unfollowed>), String> {
    if description.get(EXTERNAL).is_some() {
        return Err(format!(
            "{}: the member `{EXTERNAL}` is toolgate's own name for the files a description refers to; rename it",
            path.display()
        ));
    }
    let folder = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let folder = folder
        .canonicalize()
        .map_err(|error| format!("{}: {error}", folder.display()))?;
    let mut bundler = Bundler {
        folder,
        keys: BTreeMap::new(),
        queue: Vec::new(),
        unfollowed: Vec::new(),
        total: 0,
    };
    let root_name = path
        .file_name()
        .map_or_else(String::new, |name| name.to_string_lossy().into_owned());
    bundler.rewrite(&mut description, &root_name, &bundler.folder.clone(), None);
    let mut placed = serde_json::Map::new();
    while let Some((key, file)) = bundler.queue.pop() {
        let size = std::fs::metadata(&file).map_or(0, |meta| meta.len());
        bundler.total += size;
        if bundler.total > MAX_TOTAL_BYTES {
            return Err(format!(
                "{}: the files it refers to hold more than {} MiB together; no API description is this large",
                path.display(),
                MAX_TOTAL_BYTES >> 20
            ));
        }
        let mut document = read(&file)?;
        if !document.is_object() {
            // `KEY=value` lines read as one YAML string: not a document a reference may name.
            bundler.unfollowed.push(Unfollowed {
                file: key.clone(),
                reference: key.clone(),
                why: "not a JSON Schema or OpenAPI document (not a mapping): not placed".to_owned(),
            });
            continue;
        }
        let dir = file.parent().unwrap_or(&bundler.folder).to_path_buf();
        bundler.rewrite(&mut document, &key, &dir, Some(&key));
        placed.insert(key, document);
    }
    if !placed.is_empty()
        && let Value::Object(members) = &mut description
    {
        members.insert(EXTERNAL.to_owned(), Value::Object(placed));
    }
    Ok((description, bundler.unfollowed))
}

struct Bundler {
    /// The description's folder, resolved: no file outside it is read.
    folder: PathBuf,
    /// Each file read (resolved), by its key under [`EXTERNAL`].
    keys: BTreeMap<PathBuf, String>,
    /// Files referred to and not read yet: key and resolved path.
    queue: Vec<(String, PathBuf)>,
    unfollowed: Vec<Unfollowed>,
    total: u64,
}

impl Bundler {
    /// Rewrites every `$ref` in `document` (the file `name`, in `dir`; `key` its place under
    /// [`EXTERNAL`], `None` for the description itself). Iterative: a document is input, and its
    /// depth is whatever its author made it.
    fn rewrite(&mut self, document: &mut Value, name: &str, dir: &Path, key: Option<&str>) {
        let mut stack = vec![document];
        while let Some(value) = stack.pop() {
            match value {
                Value::Object(members) => {
                    if let Some(Value::String(reference)) = members.get_mut("$ref")
                        && let Some(rewritten) = self.follow(reference, name, dir, key)
                    {
                        *reference = rewritten;
                    }
                    stack.extend(members.values_mut());
                }
                Value::Array(items) => stack.extend(items.iter_mut()),
                _ => {}
            }
        }
    }

    /// The reference `reference`, written in the file `name`, as one into the bundled document;
    /// `None` to leave it as written.
    fn follow(
        &mut self,
        reference: &str,
        name: &str,
        dir: &Path,
        key: Option<&str>,
    ) -> Option<String> {
        let (file, fragment) = reference
            .split_once('#')
            .map_or((reference, ""), |(file, fragment)| (file, fragment));
        if file.is_empty() {
            // Within the file it is written in: within its place in the bundle.
            return key.map(|key| format!("#/{EXTERNAL}/{}{fragment}", escape(key)));
        }
        let mut skip = |why: &str| {
            self.unfollowed.push(Unfollowed {
                file: name.to_owned(),
                reference: reference.to_owned(),
                why: why.to_owned(),
            });
            None
        };
        if file.contains(':') || file.starts_with("//") {
            return skip(
                "a URL: toolgate new never fetches one; save the file beside the description and refer to it by its path",
            );
        }
        if Path::new(file).is_absolute() || file.starts_with('\\') {
            return skip(
                "an absolute path: refer to a file beside the description by a relative path",
            );
        }
        if !fragment.is_empty() && !fragment.starts_with('/') {
            return skip("a fragment that is not a JSON pointer (an anchor) is not followed");
        }
        let joined = dir.join(file);
        let resolved = match joined.canonicalize() {
            Ok(resolved) => resolved,
            Err(error) => return skip(&format!("{}: {error}", shown_path(file))),
        };
        if !resolved.starts_with(&self.folder) {
            return skip("outside the description's folder: toolgate new reads no file there");
        }
        let hidden = resolved
            .strip_prefix(&self.folder)
            .unwrap_or(&resolved)
            .components()
            .any(|part| matches!(part, Component::Normal(name) if name.to_string_lossy().starts_with('.')));
        if hidden {
            return skip(
                "a hidden file (a part of its path begins with `.`): toolgate new reads none, as they hold credentials and tools' state, not descriptions",
            );
        }
        if !resolved.is_file() {
            return skip("not a file");
        }
        let key = match self.keys.get(&resolved) {
            Some(key) => key.clone(),
            None => {
                if self.keys.len() >= MAX_FILES {
                    return skip(&format!(
                        "the description refers to more than {MAX_FILES} files"
                    ));
                }
                let key = relative_key(&resolved, &self.folder);
                self.keys.insert(resolved.clone(), key.clone());
                self.queue.push((key.clone(), resolved));
                key
            }
        };
        Some(format!("#/{EXTERNAL}/{}{fragment}", escape(&key)))
    }
}

/// A file's key: its path under the description's folder, with `/` between parts.
fn relative_key(file: &Path, folder: &Path) -> String {
    file.strip_prefix(folder)
        .unwrap_or(file)
        .components()
        .filter_map(|part| match part {
            Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("/")
}

fn shown_path(file: &str) -> String {
    toolgate_gate::internals::escape_hidden(file).into_owned()
}

fn escape(token: &str) -> String {
    crate::convert::escape(token)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(path: &Path) -> Result<Value, String> {
        crate::openapi::read_one(path)
    }

    #[test]
    fn a_file_beside_the_description_is_placed_in_it_and_referred_to_there() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("schemas")).unwrap();
        std::fs::write(
            dir.path().join("schemas/pet.yaml"),
            "Pet:\n  type: object\n  properties:\n    owner: {$ref: '../owner.json'}\n    kind: {$ref: '#/Kind'}\nKind: {type: string, enum: [cat, dog]}\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("owner.json"),
            r#"{"type": "object", "properties": {"pet": {"$ref": "schemas/pet.yaml#/Pet"}}}"#,
        )
        .unwrap();
        let description = json!({"openapi": "3.1.0", "a": {"$ref": "./schemas/pet.yaml#/Pet"}, "b": {"$ref": "#/a"}});
        let (bundled, unfollowed) =
            bundle(description, &dir.path().join("api.json"), read).unwrap();
        assert!(unfollowed.is_empty(), "{unfollowed:?}");
        assert_eq!(
            bundled["a"]["$ref"],
            "#/x-toolgate-external/schemas~1pet.yaml/Pet"
        );
        assert_eq!(bundled["b"]["$ref"], "#/a");
        let pet = &bundled[EXTERNAL]["schemas/pet.yaml"]["Pet"];
        assert_eq!(
            pet["properties"]["owner"]["$ref"],
            "#/x-toolgate-external/owner.json"
        );
        assert_eq!(
            pet["properties"]["kind"]["$ref"],
            "#/x-toolgate-external/schemas~1pet.yaml/Kind"
        );
        // The cycle back to pet.yaml reads it once.
        assert_eq!(
            bundled[EXTERNAL]["owner.json"]["properties"]["pet"]["$ref"],
            "#/x-toolgate-external/schemas~1pet.yaml/Pet"
        );
        assert_eq!(bundled[EXTERNAL].as_object().unwrap().len(), 2);
    }

    #[test]
    fn urls_files_outside_the_folder_and_missing_files_are_not_followed() {
        let outer = tempfile::tempdir().unwrap();
        std::fs::write(outer.path().join("secret.json"), r#"{"type": "string"}"#).unwrap();
        let dir = outer.path().join("api");
        std::fs::create_dir(&dir).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(outer.path().join("secret.json"), dir.join("link.json"))
            .unwrap();
        let description = json!({"paths": [
            {"$ref": "https://example.com/pet.json"},
            {"$ref": "../secret.json"},
            {"$ref": "/etc/passwd"},
            {"$ref": "missing.yaml"},
            {"$ref": "link.json"},
        ]});
        let (bundled, unfollowed) =
            bundle(description.clone(), &dir.join("api.json"), read).unwrap();
        assert_eq!(bundled, description, "nothing is placed or rewritten");
        let why: Vec<&str> = unfollowed.iter().map(|skip| skip.why.as_str()).collect();
        assert!(why.iter().any(|why| why.starts_with("a URL")), "{why:?}");
        assert!(
            why.iter().filter(|why| why.starts_with("outside")).count() >= 1,
            "{why:?}"
        );
        assert!(
            why.iter().any(|why| why.starts_with("an absolute path")),
            "{why:?}"
        );
        assert!(
            why.iter().any(|why| why.starts_with("missing.yaml")),
            "{why:?}"
        );
        assert_eq!(unfollowed.len(), 5);
    }

    /// Secrets beside a description (`.env`, a hidden folder, a credentials file) never reach
    /// the bundle as schemas: hidden files are not read, a file that is not a mapping is not
    /// placed.
    #[test]
    fn hidden_files_and_files_that_are_not_documents_are_not_placed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".env"), "API_KEY=sk-live-CANARY\n").unwrap();
        std::fs::create_dir(dir.path().join(".secrets")).unwrap();
        std::fs::write(dir.path().join(".secrets/key.json"), r#"{"key": "CANARY"}"#).unwrap();
        std::fs::write(dir.path().join("notes.yaml"), "just CANARY words\n").unwrap();
        let description = json!({"paths": [
            {"$ref": ".env"},
            {"$ref": "./.secrets/key.json"},
            {"$ref": "notes.yaml"},
        ]});
        let (bundled, unfollowed) =
            bundle(description, &dir.path().join("api.json"), read).unwrap();
        assert!(!bundled.to_string().contains("CANARY"), "{bundled}");
        let why: Vec<&str> = unfollowed.iter().map(|skip| skip.why.as_str()).collect();
        assert_eq!(
            why.iter()
                .filter(|why| why.starts_with("a hidden file"))
                .count(),
            2,
            "{why:?}"
        );
        assert!(
            why.iter().any(|why| why.starts_with("not a JSON Schema")),
            "{why:?}"
        );
    }

    #[test]
    fn the_bundles_own_member_name_is_refused_in_a_description() {
        let dir = tempfile::tempdir().unwrap();
        let description = json!({EXTERNAL: {}});
        let error = bundle(description, &dir.path().join("api.json"), read).unwrap_err();
        assert!(error.contains("rename it"), "{error}");
    }
}
