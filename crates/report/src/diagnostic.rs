//! Rendering miette diagnostics with coroner's theme.

use crate::Style;
use miette::{Diagnostic, GraphicalReportHandler, GraphicalTheme};

/// The graphical handler for `style`.
pub(crate) fn handler(style: Style) -> GraphicalReportHandler {
    let theme = if style.color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    GraphicalReportHandler::new_themed(theme)
        .with_width(style.width)
        .with_links(false)
        .with_context_lines(2)
}

/// Renders one diagnostic.
pub fn render(diagnostic: &dyn Diagnostic, style: Style) -> String {
    let mut out = String::new();
    if handler(style).render_report(&mut out, diagnostic).is_err() {
        out = format!("{diagnostic}\n");
    }
    out
}
