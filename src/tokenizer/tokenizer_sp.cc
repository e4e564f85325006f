// tokenizer_sp.cc - tokenizer.h over Debian's libsentencepiece (C++17, exported as C): a
// SentencePieceProcessor for load / encode / decode / the pieces, SentencePieceTrainer for
// hp_tokenizer_train. No exception and no SentencePiece abort crosses into C: the model file is
// read here (bounded in size, checked to start as a ModelProto does) and handed over with
// LoadFromSerializedProto, whose status becomes the one line of err.
// defines: everything of include/hyperpar/tokenizer.h
//
// The pieces' tables (GGUF token type, bytes of text) are computed once at load: bits per byte
// reads hp_tokenizer_token_bytes once per target token.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <string>
#include <sys/stat.h>
#include <unordered_map>
#include <vector>

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include "hyperpar/tokenizer.h"

namespace {

// Past this a file is not taken for a tokenizer.model (Llama 2's is 500 kB; a 1M-piece model
// stays far below it).
constexpr long long kMaxModelBytes = 256LL << 20;
// "▁" (U+2581), SentencePiece's mark for a space
constexpr char kSpaceMark[] = "\xE2\x96\x81";

void put_err(char *err, size_t errlen, const std::string &s) {
    if (err && errlen) std::snprintf(err, errlen, "%s", s.c_str());
}

// The first line of a SentencePiece status message (they may run over several).
std::string first_line(const std::string &s) {
    const size_t nl = s.find('\n');
    return nl == std::string::npos ? s : s.substr(0, nl);
}

int is_dir(const std::string &p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The bytes of text a normal piece stands for: its UTF-8 length, each "▁" one space.
int text_bytes(const std::string &piece) {
    int n = 0;
    for (size_t i = 0; i < piece.size();) {
        if (piece.compare(i, 3, kSpaceMark) == 0) { n += 1; i += 3; }
        else { n += 1; i += 1; }
    }
    return n;
}

// Lines of the training files, in order, each without its '\n' (SentencePiece trains on lines).
class FileLines : public sentencepiece::SentenceIterator {
  public:
    FileLines(const char *const *inputs, int n) : inputs_(inputs), n_(n) { next(); }
    bool done() const override { return done_; }
    void Next() override { next(); }
    const std::string &value() const override { return line_; }
    sentencepiece::util::Status status() const override { return status_; }

  private:
    void next() {
        while (!done_) {
            if (in_.is_open() && std::getline(in_, line_)) return;
            if (in_.is_open()) {
                if (in_.bad()) {
                    status_ = sentencepiece::util::Status(sentencepiece::util::StatusCode::kInternal,
                                                          std::string(inputs_[at_ - 1]) + ": read error");
                    done_ = true;
                    return;
                }
                in_.close();
            }
            if (at_ == n_) { done_ = true; return; }
            in_.clear();
            in_.open(inputs_[at_], std::ios::binary);
            if (!in_.is_open()) {
                status_ = sentencepiece::util::Status(sentencepiece::util::StatusCode::kNotFound,
                                                      std::string(inputs_[at_]) + ": cannot read");
                done_ = true;
                return;
            }
            at_++;
        }
    }
    const char *const *inputs_;
    int n_, at_ = 0;
    bool done_ = false;
    std::ifstream in_;
    std::string line_;
    sentencepiece::util::Status status_;
};

}  // namespace

struct hp_tokenizer {
    sentencepiece::SentencePieceProcessor sp;
    std::string file;
    std::vector<int> type, bytes;
};

extern "C" {

int hp_tokenizer_available(void) { return 1; }

hp_tokenizer *hp_tokenizer_load(const char *path, char *err, size_t errlen) {
    try {
        std::string file = path;
        if (is_dir(file)) file += "/tokenizer.model";
        std::FILE *f = std::fopen(file.c_str(), "rb");
        if (!f) {
            put_err(err, errlen, file + ": no such file (a tokenizer.model, or a folder holding one)");
            return nullptr;
        }
        std::string bytes;
        struct stat st;
        const long long size = fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) ? (long long)st.st_size : -1;
        if (size < 0 || size > kMaxModelBytes) {
            std::fclose(f);
            put_err(err, errlen, file + ": not a SentencePiece model (" +
                    (size < 0 ? std::string("not a regular file")
                              : std::to_string(size) + " bytes, more than a tokenizer.model's limit of " +
                                std::to_string(kMaxModelBytes)) + ")");
            return nullptr;
        }
        bytes.resize((size_t)size);
        const size_t got = size ? std::fread(&bytes[0], 1, (size_t)size, f) : 0;
        std::fclose(f);
        if (got != (size_t)size) {
            put_err(err, errlen, file + ": read error");
            return nullptr;
        }
        // A serialized ModelProto opens with its pieces (field 1, length-delimited: byte 0x0A);
        // an empty message would parse as a model of nothing.
        if (bytes.empty() || (unsigned char)bytes[0] != 0x0A) {
            put_err(err, errlen, file + ": not a SentencePiece model (" +
                    (bytes.empty() ? std::string("an empty file") : std::string("it does not start with a ModelProto's pieces")) + ")");
            return nullptr;
        }
        hp_tokenizer *tk = new hp_tokenizer;
        const auto s = tk->sp.LoadFromSerializedProto(bytes);
        if (!s.ok() || tk->sp.GetPieceSize() <= 0) {
            put_err(err, errlen, file + ": not a SentencePiece model (" +
                    (s.ok() ? std::string("no pieces") : first_line(s.ToString())) + ")");
            delete tk;
            return nullptr;
        }
        tk->file = file;
        const int n = tk->sp.GetPieceSize();
        tk->type.resize((size_t)n);
        tk->bytes.resize((size_t)n);
        for (int i = 0; i < n; i++) {
            int t = 1, b;
            if (tk->sp.IsUnknown(i)) t = 2;
            else if (tk->sp.IsControl(i)) t = 3;
            else if (tk->sp.IsByte(i)) t = 6;
            else if (tk->sp.IsUnused(i)) t = 5;
            if (t == 6) b = 1;
            else if (t == 1) b = text_bytes(tk->sp.IdToPiece(i));
            else b = 0;
            tk->type[(size_t)i] = t;
            tk->bytes[(size_t)i] = b;
        }
        return tk;
    } catch (const std::exception &e) {
        put_err(err, errlen, std::string(path) + ": " + e.what());
        return nullptr;
    }
}

void hp_tokenizer_free(hp_tokenizer *tk) { delete tk; }
const char *hp_tokenizer_file(const hp_tokenizer *tk) { return tk ? tk->file.c_str() : ""; }

int hp_tokenizer_vocab_size(const hp_tokenizer *tk) { return tk ? tk->sp.GetPieceSize() : 0; }
int hp_tokenizer_bos(const hp_tokenizer *tk) { return tk ? tk->sp.bos_id() : -1; }
int hp_tokenizer_eos(const hp_tokenizer *tk) { return tk ? tk->sp.eos_id() : -1; }
int hp_tokenizer_unk(const hp_tokenizer *tk) { return tk ? tk->sp.unk_id() : -1; }

int hp_tokenizer_encode(const hp_tokenizer *tk, const char *text, size_t len, int **ids, int *n,
                        char *err, size_t errlen) {
    *ids = nullptr;
    *n = 0;
    try {
        std::vector<int> v;
        const auto s = tk->sp.Encode(absl::string_view(text, len), &v);
        if (!s.ok()) { put_err(err, errlen, "encode: " + first_line(s.ToString())); return -1; }
        if (v.size() > (size_t)0x7fffffff) { put_err(err, errlen, "encode: more than 2^31-1 tokens"); return -1; }
        int *out = (int *)std::malloc((v.size() ? v.size() : 1) * sizeof(int));
        if (!out) { put_err(err, errlen, "encode: out of memory"); return -1; }
        if (!v.empty()) std::memcpy(out, v.data(), v.size() * sizeof(int));
        *ids = out;
        *n = (int)v.size();
        return 0;
    } catch (const std::exception &e) {
        put_err(err, errlen, std::string("encode: ") + e.what());
        return -1;
    }
}

char *hp_tokenizer_decode(const hp_tokenizer *tk, const int *ids, int n) {
    try {
        std::vector<int> v;
        const int V = tk->sp.GetPieceSize();
        v.reserve(n > 0 ? (size_t)n : 0);
        for (int i = 0; i < n; i++)
            if (ids[i] >= 0 && ids[i] < V) v.push_back(ids[i]);
        std::string text;
        if (!tk->sp.Decode(v, &text).ok()) text.clear();
        char *out = (char *)std::malloc(text.size() + 1);
        if (!out) return nullptr;
        std::memcpy(out, text.data(), text.size());
        out[text.size()] = 0;
        return out;
    } catch (const std::exception &) {
        return nullptr;
    }
}

static int in_range(const hp_tokenizer *tk, int id) { return tk && id >= 0 && (size_t)id < tk->type.size(); }

const char *hp_tokenizer_piece(const hp_tokenizer *tk, int id) {
    return in_range(tk, id) ? tk->sp.IdToPiece(id).c_str() : "";
}
float hp_tokenizer_score(const hp_tokenizer *tk, int id) { return in_range(tk, id) ? tk->sp.GetScore(id) : 0.0f; }
int hp_tokenizer_piece_type(const hp_tokenizer *tk, int id) { return in_range(tk, id) ? tk->type[(size_t)id] : 1; }
int hp_tokenizer_token_bytes(const hp_tokenizer *tk, int id) { return in_range(tk, id) ? tk->bytes[(size_t)id] : 0; }

int hp_tokenizer_train(const char *const *inputs, int n_inputs, int vocab_size, const char *model_path,
                       char *err, size_t errlen) {
    try {
        // Llama's settings (its tokenizer.model's trainer_spec), made deterministic: every line
        // is used (no sampling, no shuffle), one thread.
        const std::unordered_map<std::string, std::string> args = {
            {"model_type", "bpe"},
            {"vocab_size", std::to_string(vocab_size)},
            {"byte_fallback", "true"},
            {"character_coverage", "1.0"},
            {"split_digits", "true"},
            {"allow_whitespace_only_pieces", "true"},
            {"normalization_rule_name", "identity"},
            {"add_dummy_prefix", "true"},
            {"remove_extra_whitespaces", "false"},
            {"unk_id", "0"}, {"bos_id", "1"}, {"eos_id", "2"}, {"pad_id", "-1"},
            {"input_sentence_size", "0"},
            {"shuffle_input_sentence", "false"},
            {"max_sentence_length", "1073741824"},
            {"num_threads", "1"},
            {"train_extremely_large_corpus", "false"},
            {"minloglevel", "2"},
        };
        FileLines lines(inputs, n_inputs);
        std::string proto;
        const auto s = sentencepiece::SentencePieceTrainer::Train(args, &lines, &proto);
        if (!lines.status().ok()) { put_err(err, errlen, "train: " + first_line(lines.status().ToString())); return -1; }
        if (!s.ok()) { put_err(err, errlen, "train: " + first_line(s.ToString())); return -1; }
        // written whole to a temporary name, then renamed: a reader never sees half a model
        const std::string tmp = std::string(model_path) + ".tmp";
        std::FILE *f = std::fopen(tmp.c_str(), "wb");
        if (!f) { put_err(err, errlen, std::string(model_path) + ": cannot write"); return -1; }
        const bool ok = std::fwrite(proto.data(), 1, proto.size(), f) == proto.size();
        if (std::fclose(f) != 0 || !ok || std::rename(tmp.c_str(), model_path) != 0) {
            std::remove(tmp.c_str());
            put_err(err, errlen, std::string(model_path) + ": cannot write");
            return -1;
        }
        return 0;
    } catch (const std::exception &e) {
        put_err(err, errlen, std::string("train: ") + e.what());
        return -1;
    }
}

}  // extern "C"
