// hf.h - the Hugging Face Llama layout, both ways (src/model_io/hf_weights.c): a folder that
// transformers' LlamaForCausalLM.from_pretrained and llama.cpp's convert script read, from the
// full model hp writes (`hp export`, TorchTitan names), and back.
// defines: hp_hf_export, hp_hf_import, hp_hf_name, HP_HF_SHARD_BYTES
//
//   hp_model_config m;  hp_model_config_by_name("tiny", &m);
//   char err[256];
//   hp_hf_export("model.safetensors", &m, "tiny-hf", HP_DTYPE_FLOAT32, 0, -1, -1, err, sizeof err);
//   // tiny-hf/config.json, generation_config.json, model.safetensors (q and k permuted)
//   hp_hf_import("tiny-hf", &m, "back.safetensors", err, sizeof err);   // = model.safetensors
//
// The names (TorchTitan's state_dict_adapter): tok_embeddings.weight <-> model.embed_tokens.weight,
// layers.N.attention.{wq,wk,wv,wo}.weight <-> model.layers.N.self_attn.{q,k,v,o}_proj.weight,
// layers.N.feed_forward.{w1,w3,w2}.weight <-> model.layers.N.mlp.{gate,up,down}_proj.weight,
// layers.N.attention_norm / ffn_norm <-> input_layernorm / post_attention_layernorm,
// norm.weight <-> model.norm.weight, output.weight <-> lm_head.weight.
// The q/k permutation: hp's RoPE rotates interleaved pairs (2i, 2i+1) of a head, HF's rotates
// halves (i, i + hd/2), so row h*hd + 2i + s of wq (wk: kv heads) is HF's row h*hd + s*hd/2 + i.
// MoE models are refused: no Hugging Face class computes hp's router.
#ifndef HYPERPAR_HF_H
#define HYPERPAR_HF_H
#include <stddef.h>
#include "hyperpar/config.h"

// Past this many bytes of weights the export writes model-0000K-of-0000N.safetensors shards and
// model.safetensors.index.json (transformers' max_shard_size default); 0 in shard_bytes below
// means this.
#define HP_HF_SHARD_BYTES ((size_t)5000000000u)

// The HF name of hp's tensor `name` into out (n bytes); 0, or -1 when it has none.
int hp_hf_name(const char *name, char *out, size_t n);

// Writes out_dir (made if missing) from the full model in hp_file (F32 or BF16 tensors, every
// parameter of m): config.json, generation_config.json and the weights in dtype (F32, or BF16 by
// RNE), sharded past shard_bytes (0: HP_HF_SHARD_BYTES). bos / eos: the tokenizer's ids for
// generation_config.json (-1: none). Returns 0, or HP_EXIT_CONFIG (a model it cannot express, a
// file that is not m's) / HP_EXIT_FAIL (cannot write) with one line in err.
int hp_hf_export(const char *hp_file, const hp_model_config *m, const char *out_dir,
                 hp_mp_dtype dtype, size_t shard_bytes, int bos, int eos, char *err, size_t errlen);

// Reads the HF folder hf_dir (config.json checked against m field by field; model.safetensors
// or the shards its index names) into one hp safetensors file out_file with TorchTitan names,
// q and k un-permuted, each tensor in the dtype it had: what `hp run --load` reads. Returns 0,
// or HP_EXIT_CONFIG with one line in err (a config that disagrees with m, a missing or extra
// tensor, a wrong shape or dtype) / HP_EXIT_FAIL (cannot write).
int hp_hf_import(const char *hf_dir, const hp_model_config *m, const char *out_file, char *err,
                 size_t errlen);

#endif
