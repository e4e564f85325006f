// metrics_svg.c - {job.dump_folder}/loss.svg (hand-written SVG, no library): the train loss of
// the logged steps as a line and each validation round's loss as a point in the upper panel, the
// lr below, both on one step axis. Written whole to a temporary file and renamed over the old
// one, so that a viewer (or a crash) never sees half a picture.
// defines: hp_metrics_svg
#include <math.h>
#include <stdio.h>
#include "hyperpar/metrics.h"
#include "svg.h"

#define C_TRAIN "#1c3f94"
#define C_VAL   "#f08c00"
#define C_LR    "#1a7f37"
#define C_AXIS  "#555"

enum { W = 760, HGT = 520, AX = 78, AW = W - AX - 24 };
enum { LOSS_Y = 52, LOSS_H = 290, LR_Y = 380, LR_H = 96 };

typedef struct axis { int first, last; } axis;

static double x_of(const axis *a, int step) {
    if (a->last <= a->first) return AX + AW / 2.0;
    return AX + AW * (double)(step - a->first) / (double)(a->last - a->first);
}

static double y_of(double v, double y0, double h, double lo, double hi) {
    return y0 + h - h * (v - lo) / (hi - lo);
}

// The finite range of the points' y (a flat series: +-1e-3 around it), padded by 2 %.
static int range_of(const hp_svg_point *a, int na, const hp_svg_point *b, int nb, double *lo, double *hi) {
    int any = 0;
    for (int k = 0; k < na + nb; k++) {
        const double v = k < na ? a[k].y : b[k - na].y;
        if (!isfinite(v)) continue;
        if (!any || v < *lo) *lo = v;
        if (!any || v > *hi) *hi = v;
        any = 1;
    }
    if (!any) return 0;
    if (!(*hi > *lo)) { *hi += 1e-3; *lo -= 1e-3; }
    const double pad = 0.02 * (*hi - *lo);
    *hi += pad;
    *lo -= pad;
    return 1;
}

// A line through the finite points; a non-finite one breaks it.
static void polyline(FILE *f, const axis *a, const hp_svg_point *p, int n, double y0, double h, double lo,
                     double hi, const char *color) {
    int open = 0;
    for (int k = 0; k <= n; k++) {
        const int ok = k < n && isfinite(p[k].y);
        if (ok && !open) { fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\" points=\"", color); open = 1; }
        else if (!ok && open) { fputs("\"/>\n", f); open = 0; }
        if (ok) fprintf(f, "%.1f,%.1f ", x_of(a, p[k].step), y_of(p[k].y, y0, h, lo, hi));
    }
}

// Widens [lo, hi] to whole multiples of a round tick (1, 2 or 5 x 10^n) that leaves 4 to 8 ticks.
static double nice_range(double *lo, double *hi) {
    const double raw = (*hi - *lo) / 5.0, mag = pow(10.0, floor(log10(raw))), r = raw / mag;
    const double tick = (r < 1.5 ? 1.0 : r < 3.5 ? 2.0 : r < 7.5 ? 5.0 : 10.0) * mag;
    *lo = floor(*lo / tick) * tick;
    *hi = ceil(*hi / tick) * tick;
    return tick;
}

// Frame, horizontal grid and labels of a panel: a label at every tick from lo to hi.
static void panel(FILE *f, double y0, double h, double lo, double hi, double tick, const char *fmt,
                  const char *name) {
    char buf[48];
    fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"#fbfbfb\" stroke=\"#bbb\"/>\n", AX, y0,
            AW, h);
    const int ticks = (int)floor((hi - lo) / tick * (1 + 1e-9));   // none above hi
    for (int t = 0; t <= ticks && ticks <= 20; t++) {
        const double v = lo + tick * t, y = y_of(v, y0, h, lo, hi);
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n", AX, y, AX + AW, y);
        snprintf(buf, sizeof buf, fmt, fabs(v) < 1e-12 * tick ? 0.0 : v);
        hp_svg_text(f, AX - 5, y + 3, "font-size=\"10\" text-anchor=\"end\" fill=\"" C_AXIS "\"", buf);
    }
    fprintf(f, "<text x=\"16\" y=\"%.1f\" font-size=\"11\" fill=\"" C_AXIS "\" text-anchor=\"middle\" "
            "transform=\"rotate(-90 16 %.1f)\">", y0 + h / 2, y0 + h / 2);
    hp_svg_escaped(f, name);
    fputs("</text>\n", f);
}

static void step_tick(FILE *f, const axis *a, int s) {
    char buf[32];
    const double x = x_of(a, s);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#bbb\"/>\n", x, LR_Y + LR_H, x,
            LR_Y + LR_H + 4);
    snprintf(buf, sizeof buf, "%d", s);
    hp_svg_text(f, x, LR_Y + LR_H + 15, "font-size=\"10\" text-anchor=\"middle\" fill=\"" C_AXIS "\"", buf);
}

// Step ticks under the lr panel: the first and last steps, and the multiples of 1, 2 or 5 x 10^n
// between them that leave at most 8 ticks (none crowding the last).
static void step_axis(FILE *f, const axis *a) {
    const long span = (long)a->last - a->first;
    long every = 1, base = 1;
    while (span / every > 7) {
        if (every == base) every = 2 * base;
        else if (every == 2 * base) every = 5 * base;
        else every = base *= 10;
    }
    step_tick(f, a, a->first);
    for (long s = ((long)a->first / every + 1) * every; s < a->last; s += every)
        if (a->last - s >= every / 2 && s - a->first >= every / 2) step_tick(f, a, (int)s);
    if (span > 0) step_tick(f, a, a->last);
    hp_svg_text(f, AX + AW / 2.0, LR_Y + LR_H + 32, "font-size=\"11\" text-anchor=\"middle\" fill=\"" C_AXIS "\"",
                  "step");
}

static void write_svg(FILE *f, const char *title, const axis *a, const hp_svg_point *loss, const hp_svg_point *lr,
                      int n_train, const hp_svg_point *val, int n_val) {
    char buf[96];
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            W, HGT, W, HGT);
    hp_svg_text(f, AX, 22, "font-size=\"14\" font-weight=\"bold\"", title);
    // legend
    fprintf(f, "<line x1=\"%d\" y1=\"38\" x2=\"%d\" y2=\"38\" stroke=\"" C_TRAIN "\" stroke-width=\"2\"/>\n", AX, AX + 18);
    hp_svg_text(f, AX + 22, 42, "font-size=\"11\"", "train loss");
    fprintf(f, "<circle cx=\"%d\" cy=\"38\" r=\"3.5\" fill=\"" C_VAL "\"/>\n", AX + 110);
    hp_svg_text(f, AX + 118, 42, "font-size=\"11\"", "validation loss");
    fprintf(f, "<line x1=\"%d\" y1=\"38\" x2=\"%d\" y2=\"38\" stroke=\"" C_LR "\" stroke-width=\"2\"/>\n", AX + 230,
            AX + 248);
    hp_svg_text(f, AX + 252, 42, "font-size=\"11\"", "lr");

    double lo = 0, hi = 1;
    const int have_loss = range_of(loss, n_train, val, n_val, &lo, &hi);
    const double tick = nice_range(&lo, &hi);
    panel(f, LOSS_Y, LOSS_H, lo, hi, tick, "%.6g", "loss");
    if (have_loss) {
        polyline(f, a, loss, n_train, LOSS_Y, LOSS_H, lo, hi, C_TRAIN);
        for (int k = 0; k < n_val; k++) {
            if (!isfinite(val[k].y)) continue;
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"" C_VAL "\">", x_of(a, val[k].step),
                    y_of(val[k].y, LOSS_Y, LOSS_H, lo, hi));
            snprintf(buf, sizeof buf, "step %d: validation loss %.5f", val[k].step, val[k].y);
            fputs("<title>", f);
            hp_svg_escaped(f, buf);
            fputs("</title></circle>\n", f);
        }
    }
    double lr_hi = 0;
    for (int k = 0; k < n_train; k++)
        if (isfinite(lr[k].y) && lr[k].y > lr_hi) lr_hi = lr[k].y;
    if (!(lr_hi > 0)) lr_hi = 1;
    double lr_lo = 0;
    const double lr_tick = nice_range(&lr_lo, &lr_hi);
    panel(f, LR_Y, LR_H, lr_lo, lr_hi, 2 * lr_tick, "%.3g", "lr");
    polyline(f, a, lr, n_train, LR_Y, LR_H, lr_lo, lr_hi, C_LR);
    step_axis(f, a);
    fputs("</svg>\n", f);
}

int hp_metrics_svg(const char *path, const char *title, int first, int last, const hp_svg_point *loss,
                     const hp_svg_point *lr, int n_train, const hp_svg_point *val, int n_val) {
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) return -1;
    FILE *f = fopen(tmp, "w");
    if (!f) return -1;
    const axis a = { first, last };
    write_svg(f, title, &a, loss, lr, n_train, val, n_val);
    const int bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
        remove(tmp);
        return -1;
    }
    return 0;
}
