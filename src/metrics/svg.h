// svg.h - the few pieces of hand-written SVG that hp's pictures share (loss.svg of the metrics,
// metrics_svg.c; report.svg of hp matrix, tools/hp/matrix/report_svg.c).
// defines: hp_svg_escaped, hp_svg_text
#ifndef HP_METRICS_SVG_H
#define HP_METRICS_SVG_H
#include <stdio.h>

// s with XML's five special characters escaped (& < > " as entities; ' is left: attributes
// are double-quoted).
void hp_svg_escaped(FILE *f, const char *s);
// <text x y attrs>s</text>, s escaped; attrs is raw SVG attribute text.
void hp_svg_text(FILE *f, double x, double y, const char *attrs, const char *s);

#endif
