// svg.c - the shared SVG pieces of svg.h.
// defines: hp_svg_escaped, hp_svg_text
#include "svg.h"

void hp_svg_escaped(FILE *f, const char *s) {
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

void hp_svg_text(FILE *f, double x, double y, const char *attrs, const char *s) {
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" %s>", x, y, attrs);
    hp_svg_escaped(f, s);
    fputs("</text>\n", f);
}
