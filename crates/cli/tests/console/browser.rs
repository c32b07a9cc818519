//! A headless Chromium for the console tests, driven over WebDriver: Debian's `chromium` and
//! `chromium-driver` (scripts/test installs them as root when missing), `chromedriver` on a free loopback
//! port, `fantoccini` as the client. Every wait polls a condition in the page with a bound; screenshots go
//! to `target/console-screenshots/`.

use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use rsc_testkit::free_port;
use serde_json::{Value, json};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a page condition may take (a 2-core machine running other tests).
pub const WAIT: Duration = Duration::from_secs(45);

fn tool(env: &str, default: &str) -> PathBuf {
    let path = std::env::var_os(env)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(default));
    assert!(
        path.exists(),
        "{} is missing: the console's browser tests need Debian's chromium and chromium-driver \
         (apt-get install -y chromium chromium-driver; scripts/test installs them when run as root), \
         or {env} naming the binary",
        path.display()
    );
    path
}

/// Where the screenshots of a test run go.
pub fn screenshot_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target.join("console-screenshots")
}

pub struct Browser {
    client: Option<Client>,
    driver: Child,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts chromedriver and a headless Chromium with a laptop-sized window.
    pub async fn start() -> Browser {
        let chromium = tool("RSC_CHROMIUM", "/usr/bin/chromium");
        let chromedriver = tool("RSC_CHROMEDRIVER", "/usr/bin/chromedriver");
        let port = free_port();
        // Its own process group, so that dropping the browser also ends the Chromium it started.
        let driver = Command::new(&chromedriver)
            .arg(format!("--port={port}"))
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let profile = tempfile::tempdir().expect("a browser profile directory");
        let mut browser = Browser {
            client: None,
            driver,
            _profile: profile,
        };
        let url = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + WAIT;
        loop {
            let ready = reqwest::get(format!("{url}/status")).await;
            if let Ok(r) = ready
                && let Ok(v) = r.json::<Value>().await
                && v["value"]["ready"] == true
            {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "chromedriver did not answer on {url} within {WAIT:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let caps = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": [
                    "--headless=new",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-dev-shm-usage",
                    "--no-first-run",
                    "--disable-extensions",
                    "--window-size=1366,900",
                    format!("--user-data-dir={}", browser._profile.path().display()),
                ]
            }
        });
        let serde_json::Value::Object(caps) = caps else {
            unreachable!()
        };
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(caps)
            .connect(&url)
            .await
            .expect("a Chromium session");
        browser.client = Some(client);
        browser
    }

    fn c(&self) -> &Client {
        self.client.as_ref().expect("a live session")
    }

    pub async fn goto(&self, url: &str) {
        self.c().goto(url).await.expect("navigates");
    }

    /// Runs `script` (a function body that `return`s) in the page.
    pub async fn js(&self, script: &str) -> Value {
        self.c()
            .execute(script, vec![])
            .await
            .unwrap_or_else(|e| panic!("script failed: {e}\n{script}"))
    }

    /// Polls `script` until it returns something truthy, within `bound`; returns that value.
    pub async fn wait_for(&self, what: &str, script: &str, bound: Duration) -> Value {
        let deadline = Instant::now() + bound;
        loop {
            let last = match self.c().execute(script, vec![]).await {
                Ok(v) if truthy(&v) => return v,
                Ok(v) => v,
                Err(e) => Value::String(e.to_string()),
            };
            if Instant::now() >= deadline {
                let page = self.js("return document.body.innerText").await;
                panic!("waited {bound:?} for {what}; last answer {last}\npage text:\n{page}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until an element matching `css` is in the page.
    pub async fn wait_css(&self, css: &str) {
        self.wait_for(
            &format!("an element {css}"),
            &format!("return !!document.querySelector({})", json!(css)),
            WAIT,
        )
        .await;
    }

    pub async fn exists(&self, css: &str) -> bool {
        self.js(&format!("return !!document.querySelector({})", json!(css)))
            .await
            == Value::Bool(true)
    }

    pub async fn text(&self, css: &str) -> String {
        let v = self
            .js(&format!(
                "const e = document.querySelector({}); return e ? e.innerText : null",
                json!(css)
            ))
            .await;
        v.as_str()
            .unwrap_or_else(|| panic!("no element {css}"))
            .to_owned()
    }

    /// Clicks the element `css`. A live refresh may replace the element between finding and clicking it,
    /// so a failed click is retried on the element found again (within [`WAIT`]).
    pub async fn click(&self, css: &str) {
        let deadline = Instant::now() + WAIT;
        loop {
            self.wait_css(css).await;
            let clicked = match self.c().find(Locator::Css(css)).await {
                Ok(e) => e.click().await,
                Err(e) => Err(e),
            };
            match clicked {
                Ok(()) => return,
                Err(e) if Instant::now() >= deadline => panic!("click {css}: {e}"),
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }

    /// Types `keys` (WebDriver key codes allowed: \u{E004} Tab, \u{E007} Enter) into the focused element.
    pub async fn keys(&self, keys: &str) {
        let focused = self.c().active_element().await.expect("a focused element");
        focused.send_keys(keys).await.expect("typing");
    }

    /// Replaces the value of the input `css` by typing `text`.
    pub async fn fill(&self, css: &str, text: &str) {
        self.wait_css(css).await;
        let e = self.c().find(Locator::Css(css)).await.expect("element");
        e.clear().await.expect("clear");
        e.send_keys(text).await.expect("typing");
    }

    /// Checks the page's basic accessibility: every form control has a label, every button and link says
    /// what it does, every table has a caption, the page has one main heading, and every visible text has a
    /// contrast of at least 4.5:1 against its background (3:1 for large text; WCAG AA).
    pub async fn assert_accessible(&self, page: &str) {
        let problems = self
            .js(
                "const p = []; \
                 for (const e of document.querySelectorAll('input, select, textarea')) { \
                   if (e.type === 'hidden' || e.closest('[hidden]') || e.closest('dialog:not([open])')) continue; \
                   if (e.labels.length === 0 && !e.getAttribute('aria-label')) p.push('unlabelled ' + (e.id || e.outerHTML)); } \
                 for (const e of document.querySelectorAll('button, a[href]')) { \
                   if (e.closest('[hidden]') || e.closest('dialog:not([open])')) continue; \
                   if (!(e.innerText || '').trim() && !e.getAttribute('aria-label')) p.push('nameless ' + e.outerHTML); } \
                 for (const t of document.querySelectorAll('table')) if (!t.caption) p.push('table without caption ' + t.id); \
                 const h1 = [...document.querySelectorAll('h1')].filter((h) => !h.closest('[hidden]')); \
                 if (h1.length !== 1) p.push(h1.length + ' main headings'); \
                 const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number); \
                 const lum = (c) => { const v = rgb(c).slice(0, 3).map((x) => { x /= 255; return x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4); }); \
                   return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]; }; \
                 const bg = (e) => { for (; e; e = e.parentElement) { const c = getComputedStyle(e).backgroundColor; const a = rgb(c); \
                   if (a.length === 3 || (a.length === 4 && a[3] > 0.5)) return c; } return 'rgb(255, 255, 255)'; }; \
                 for (const e of document.querySelectorAll('body *')) { \
                   if (e.closest('[hidden]') || e.closest('dialog:not([open])') || e.disabled || !e.getClientRects().length) continue; \
                   if (![...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())) continue; \
                   const st = getComputedStyle(e); const l1 = lum(st.color), l2 = lum(bg(e)); \
                   const ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05); \
                   const large = parseFloat(st.fontSize) >= 24 || (parseFloat(st.fontSize) >= 18.6 && Number(st.fontWeight) >= 700); \
                   if (ratio < (large ? 3 : 4.5)) p.push('contrast ' + ratio.toFixed(2) + ' of ' + e.tagName + ' ' + e.textContent.trim().slice(0, 30)); } \
                 return p;",
            )
            .await;
        assert_eq!(problems, json!([]), "accessibility of {page}");
    }

    /// Chooses the option `value` of the select `css`.
    pub async fn select(&self, css: &str, value: &str) {
        self.wait_css(css).await;
        self.c()
            .find(Locator::Css(css))
            .await
            .expect("element")
            .select_by_value(value)
            .await
            .unwrap_or_else(|e| panic!("select {value} in {css}: {e}"));
    }

    /// Saves a screenshot of the whole page as `<name>.png` (the window grows to the page's height for it).
    pub async fn screenshot(&self, name: &str) {
        let height = self
            .js("return Math.min(1600, Math.max(900, document.documentElement.scrollHeight))")
            .await
            .as_u64()
            .unwrap_or(900) as u32;
        self.c().set_window_size(1366, height).await.ok();
        let png = self.c().screenshot().await.expect("a screenshot");
        self.c().set_window_size(1366, 900).await.ok();
        let dir = screenshot_dir();
        std::fs::create_dir_all(&dir).expect("screenshot directory");
        std::fs::write(dir.join(format!("{name}.png")), png).expect("screenshot written");
    }

    pub async fn close(mut self) {
        if let Some(c) = self.client.take() {
            c.close().await.ok();
        }
    }
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        _ => true,
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.driver.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
