//! The fatal messages of the frameworks, listed from their sources
//! (`tests/data/source-messages.tsv`: framework, the category the raising
//! condition means, where it is raised, the message as printed), each read
//! on its own and after the head of a Python traceback. The floor is the
//! number read right when the list was made; rules may only raise it.

use crate::util::{builtin_rules, root, Scratch};

/// Messages of the list named right (either form), as measured.
const FLOOR: usize = 2432;

struct Message {
    framework: String,
    category: String,
    text: String,
}

fn messages() -> Vec<Message> {
    let path = root().join("tests/data/source-messages.tsv");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter_map(|line| {
            let mut fields = line.splitn(4, '\t');
            let framework = fields.next()?.to_owned();
            let category = fields.next()?.to_owned();
            let _source = fields.next()?;
            // A message of several lines is written on one, its lines
            // joined by ` ⏎ `.
            let text = fields.next()?.replace(" ⏎ ", "\n");
            Some(Message {
                framework,
                category,
                text,
            })
        })
        .collect()
}

#[test]
fn the_frameworks_fatal_messages_are_read_by_meaning() {
    let messages = messages();
    assert!(messages.len() >= 2702, "{} messages", messages.len());
    for m in &messages {
        assert!(
            m.category.parse::<coroner_model::Category>().is_ok(),
            "{}: category {}",
            m.framework,
            m.category
        );
    }
    let rules = builtin_rules();
    let scratch = Scratch::new("source-messages");
    let head = "Traceback (most recent call last):\n  File \"train.py\", line 10, in <module>\n    main()\n";
    let mut right = 0;
    let mut missed = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let forms = [format!("{}\n", m.text), format!("{head}{}\n", m.text)];
        let named = forms.iter().enumerate().any(|(j, form)| {
            let path = scratch.path(&format!("{i}-{j}.log"));
            std::fs::write(&path, form).unwrap();
            let paths = vec![path.to_string_lossy().into_owned()];
            let report =
                coroner_analyze::analyze_with(&paths, &rules, coroner_analyze::Options::default());
            report.root_cause.category.as_str() == m.category
        });
        if named {
            right += 1;
        } else {
            missed.push(format!(
                "{} {}: {}",
                m.framework,
                m.category,
                m.text.lines().next().unwrap_or_default()
            ));
        }
    }
    assert!(
        right >= FLOOR,
        "{right} of {} source messages read right (floor {FLOOR}); missed:\n{}",
        messages.len(),
        missed.join("\n")
    );
}
