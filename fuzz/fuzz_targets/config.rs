//! The configuration loader (`nodewarden::config::from_str`) on arbitrary text: it must return
//! a configuration or errors, never panic; an accepted configuration must render (the
//! `config --effective` output) without panicking, and every error must name a line.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The loader takes text; invalid UTF-8 is refused before it by the file reader.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match nodewarden::config::from_str_with_warnings(text, None) {
        Ok(loaded) => {
            let _ = nodewarden::config::effective_text(&loaded.config);
            let _ = nodewarden::config::effective_json(&loaded.config).to_string();
            for warning in &loaded.warnings {
                let _ = warning.to_string();
            }
        }
        Err(errors) => {
            assert!(!errors.0.is_empty(), "an Err with no error in it");
            let _ = errors.to_string();
        }
    }
});
