// svg.c - the shared SVG pieces of svg.h.
// defines: tool_svg_escaped, tool_svg_text
#include "svg.h"

void tool_svg_escaped(FILE *f, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default:  fputc(*s, f);
        }
    }
}

void tool_svg_text(FILE *f, double x, double y, const char *attrs, const char *s) {
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" %s>", x, y, attrs);
    tool_svg_escaped(f, s);
    fputs("</text>\n", f);
}
