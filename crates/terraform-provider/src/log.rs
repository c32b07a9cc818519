//! The provider's log: one JSON object a line on stderr in the shape Terraform's plugin host reads
//! (`@level`, `@message`, `@timestamp`, then the event's fields), so `TF_LOG=INFO` (or `TF_LOG_PROVIDER`)
//! shows the request ids of every mutation at their level. Passwords and tokens are never logged.

use std::fmt;
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// Installs the stderr logger, unless `PLUGIN_LOG_FILE` asks the plugin library to install its own.
pub fn init() {
    if std::env::var_os("PLUGIN_LOG_FILE").is_some() {
        return;
    }
    let filter = Targets::new()
        .with_target("terraform_provider_rsc", LevelFilter::DEBUG)
        .with_target("rsc_client", LevelFilter::INFO)
        .with_default(LevelFilter::WARN);
    let subscriber = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .event_format(Hclog)
        .finish();
    use tracing_subscriber::layer::SubscriberExt;
    let _ = tracing::subscriber::set_global_default(subscriber.with(filter));
}

/// Formats an event as one hclog JSON line.
struct Hclog;

impl<S, N> FormatEvent<S, N> for Hclog
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let mut line = serde_json::Map::new();
        line.insert(
            "@level".into(),
            event.metadata().level().as_str().to_lowercase().into(),
        );
        line.insert("@message".into(), fields.message.into());
        line.insert("@module".into(), "provider.terraform-provider-rsc".into());
        // Terraform's plugin host parses exactly this layout (microseconds, UTC); any other makes it log the
        // whole line as raw DEBUG text.
        let stamp = time::macros::format_description!(
            "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z"
        );
        if let Ok(now) = time::OffsetDateTime::now_utc().format(&stamp) {
            line.insert("@timestamp".into(), now.into());
        }
        for (k, v) in fields.rest {
            line.insert(k, v);
        }
        writeln!(writer, "{}", serde_json::Value::Object(line))
    }
}

#[derive(Default)]
struct Fields {
    message: String,
    rest: Vec<(String, serde_json::Value)>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message = value.to_owned();
        } else {
            self.rest.push((field.name().to_owned(), value.into()));
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.rest.push((field.name().to_owned(), value.into()));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.rest.push((field.name().to_owned(), value.into()));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.rest.push((field.name().to_owned(), value.into()));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let text = format!("{value:?}");
        if field.name() == "message" {
            self.message = text;
        } else {
            self.rest.push((field.name().to_owned(), text.into()));
        }
    }
}
