//! Sets the real-Kafka reference up (Java checked, the jars resolved from Maven Central into
//! `target/kafka-interop/jars`, the Java programs compiled) and prints where it is: what `.ci/run` calls once
//! before the tests, which would otherwise do it themselves on first use.

fn main() -> std::process::ExitCode {
    match kafka_interop::Kafka::get() {
        Some(k) => {
            println!(
                "Kafka {} reference ready: jars in {}, programs in {}",
                kafka_interop::KAFKA_VERSION,
                k.jars.display(),
                k.classes.display()
            );
            std::process::ExitCode::SUCCESS
        }
        None => {
            println!("skipped: LOGCOMPACT_SKIP_KAFKA is set");
            std::process::ExitCode::SUCCESS
        }
    }
}
