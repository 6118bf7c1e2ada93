//! Setting the reference up once: Java 17 and Maven checked, the jars resolved, the programs compiled.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{Error, Kafka, Result, succeeded};

/// The variable that skips the real-Kafka tests (refused under CI).
pub const SKIP_VARIABLE: &str = "LOGCOMPACT_SKIP_KAFKA";

/// The reference, or `None` when skipped, or why it cannot be had (the message names the fix).
pub(crate) fn find_or_make() -> Result<Option<Kafka>, String> {
    if std::env::var_os(SKIP_VARIABLE).is_some() {
        if std::env::var_os("CI").is_some() {
            return Err(format!("CI must run the real-Kafka tests: {SKIP_VARIABLE} is refused"));
        }
        // Past the test harness's capture, so that a skip shows even for passing tests.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!("note: the real-Kafka checks of this test binary are skipped: {SKIP_VARIABLE} is set\n").as_bytes(),
        );
        return Ok(None);
    }
    make().map(Some).map_err(|e| {
        format!(
            "{e}. The real-Kafka tests run Apache Kafka {} from Maven Central jars: they need Java 17 or newer \
             (`java`), Maven (`mvn`) and access to Maven Central. Set {SKIP_VARIABLE}=1 to skip them",
            crate::KAFKA_VERSION
        )
    })
}

/// The repository's root (this crate lives in `interop/`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Cargo's target directory: `CARGO_TARGET_DIR` when set, else `target/` of the repository.
fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) => {
            let d = PathBuf::from(d);
            if d.is_absolute() { d } else { root.join(d) }
        }
        None => root.join("target"),
    }
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> Error + 'a {
    move |source| Error::Io { what, path: path.to_path_buf(), source }
}

fn make() -> Result<Kafka> {
    let root = root();
    let target = target_dir(&root);
    let work = target.join("kafka-interop");
    fs::create_dir_all(&work).map_err(io("create", &work))?;
    // One process sets up; the others wait for it (test binaries run side by side).
    let lock_path = work.join("setup.lock");
    let lock = fs::File::create(&lock_path).map_err(io("create", &lock_path))?;
    if lock.try_lock().is_err() {
        crate::say("Kafka 4.4 for the tests: waiting for another test process that sets it up");
        lock.lock().map_err(io("lock", &lock_path))?;
    }
    check_java()?;
    let jars = work.join("jars");
    resolve_jars(&root, &target, &jars)?;
    let (classes, sources_hash) = compile(&root, &work, &jars)?;
    Ok(Kafka { root, jars, classes, work, sources_hash })
}

/// Java 17 or newer, and `javac` beside it.
fn check_java() -> Result<()> {
    let missing = |tool: &'static str, fix: &str| Error::Missing { tool, fix: fix.to_owned() };
    let out = Command::new("java")
        .arg("-version")
        .output()
        .map_err(|_| missing("java", "install a JDK 17 or newer (Debian: openjdk-17-jdk-headless)"))?;
    let text = String::from_utf8_lossy(&out.stderr);
    let major = text
        .split('"')
        .nth(1)
        .and_then(|v| v.split(['.', '-', '+']).next())
        .and_then(|m| m.parse::<u32>().ok())
        .unwrap_or(0);
    if major < 17 {
        return Err(missing("Java 17 or newer", &format!("`java -version` says {:?}", text.lines().next())));
    }
    Command::new("javac")
        .arg("-version")
        .output()
        .map_err(|_| missing("javac", "install the JDK, not only the runtime (openjdk-17-jdk-headless)"))?;
    Ok(())
}

/// A hash of the files `paths`' contents, names included.
fn hash_files(paths: &[PathBuf]) -> Result<u64> {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for p in paths {
        h.update(p.to_string_lossy().as_bytes());
        h.update(&fs::read(p).map_err(io("read", p))?);
    }
    Ok(h.digest())
}

/// Resolves `interop/kafka/pom.xml`'s dependencies into `jars` once (a `ready` file holds the pom's hash).
fn resolve_jars(root: &Path, target: &Path, jars: &Path) -> Result<()> {
    let pom = root.join("interop/kafka/pom.xml");
    let want = format!("{:016x}", hash_files(std::slice::from_ref(&pom))?);
    let ready = jars.join(".ready");
    if fs::read_to_string(&ready).is_ok_and(|h| h == want) {
        return Ok(());
    }
    let _ = fs::remove_dir_all(jars);
    crate::say(&format!(
        "Kafka 4.4 for the tests: Maven fetches its jars from Maven Central into {} (once; a minute or two)",
        jars.display()
    ));
    let out = Command::new("mvn")
        .args(["-q", "-B", "-f"])
        .arg(&pom)
        .arg(format!("-Dmaven.repo.local={}", target.join("kafka-m2").display()))
        .arg("dependency:copy-dependencies")
        .arg(format!("-DoutputDirectory={}", jars.display()))
        .arg("-DincludeScope=runtime")
        .output()
        .map_err(|_| Error::Missing { tool: "mvn", fix: "install Maven 3 (Debian: maven)".into() })?;
    if !out.status.success() {
        // Maven prints its errors on standard output.
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = text.lines().rev().take(20).collect();
        return Err(Error::Command {
            what: "mvn dependency:copy-dependencies (interop/kafka/pom.xml)".into(),
            status: out.status.to_string(),
            stderr: tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
        });
    }
    fs::write(&ready, want).map_err(io("write", &ready))
}

/// Every `.java` file under `dir`, sorted.
fn java_sources(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut all = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).map_err(io("list", &d))? {
            let p = e.map_err(io("list", &d))?.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "java") {
                all.push(p);
            }
        }
    }
    all.sort();
    Ok(all)
}

/// Compiles the programs into `work/classes` when their sources changed (`.hash` holds the sources' hash).
fn compile(root: &Path, work: &Path, jars: &Path) -> Result<(PathBuf, u64)> {
    let sources = java_sources(&root.join("interop/kafka/src"))?;
    let hash = hash_files(&sources)?;
    let classes = work.join("classes");
    let stamp = classes.join(".hash");
    if fs::read_to_string(&stamp).is_ok_and(|h| h == format!("{hash:016x}")) {
        return Ok((classes, hash));
    }
    let fresh = work.join("classes.new");
    let _ = fs::remove_dir_all(&fresh);
    fs::create_dir_all(&fresh).map_err(io("create", &fresh))?;
    crate::say(&format!(
        "Kafka 4.4 for the tests: compiling the Java test programs (interop/kafka/src) into {}",
        classes.display()
    ));
    let out = Command::new("javac")
        .args(["-nowarn", "-encoding", "UTF-8", "-d"])
        .arg(&fresh)
        .arg("-cp")
        .arg(format!("{}/*", jars.display()))
        .args(&sources)
        .output()
        .map_err(|_| Error::Missing { tool: "javac", fix: "install a JDK 17 or newer".into() })?;
    succeeded("javac interop/kafka/src", out)?;
    fs::write(fresh.join(".hash"), format!("{hash:016x}")).map_err(io("write", &fresh))?;
    let _ = fs::remove_dir_all(&classes);
    fs::rename(&fresh, &classes).map_err(io("rename", &fresh))?;
    Ok((classes, hash))
}
