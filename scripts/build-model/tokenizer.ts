/**
 * A character-level tokenizer in the Hugging Face `tokenizers` format: a BPE model without merges
 * over the printable ASCII characters and newline, so every sampled token is a readable character.
 * Anything else encodes to `<unk>`. ChatML special tokens and a ChatML chat template make it usable
 * with `messages`, like SmolLM2 or Qwen2.5 instruct models.
 */

export const SPECIAL_TOKENS = ['<unk>', '<s>', '</s>', '<pad>', '<|im_start|>', '<|im_end|>'] as const;
export const UNK_ID = 0;
export const BOS_ID = 1;
export const EOS_ID = 2;
export const PAD_ID = 3;
export const IM_END_ID = 5;
/** Generation stops at either end-of-text or end-of-turn. */
export const EOS_IDS = [EOS_ID, IM_END_ID];

const CHARACTERS = ['\n', ...Array.from({ length: 0x7f - 0x20 }, (_, i) => String.fromCharCode(0x20 + i))];

/** Specials plus characters: the vocabulary size before reserved tokens. */
export const BASE_VOCAB_SIZE = SPECIAL_TOKENS.length + CHARACTERS.length;

export const CHAT_TEMPLATE =
  "{{ bos_token }}{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

export function vocabulary(reservedTokens: number): string[] {
  const reserved = Array.from({ length: reservedTokens }, (_, i) => `<|reserved_${i}|>`);
  return [...SPECIAL_TOKENS, ...CHARACTERS, ...reserved];
}

export function tokenizerJson(vocab: string[]): object {
  const addedToken = (id: number) => ({
    id,
    content: vocab[id],
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  });
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: SPECIAL_TOKENS.map((_, id) => addedToken(id)),
    normalizer: null,
    pre_tokenizer: null,
    // Like Llama: `add_special_tokens` prepends <s>. Chat templates add it themselves.
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [
        { SpecialToken: { id: '<s>', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '<s>', type_id: 1 } },
        { Sequence: { id: 'B', type_id: 1 } },
      ],
      special_tokens: { '<s>': { id: '<s>', ids: [BOS_ID], tokens: ['<s>'] } },
    },
    // Without a decoder, tokens would be joined with spaces; Fuse concatenates them.
    decoder: { type: 'Fuse' },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: '<unk>',
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab: Object.fromEntries(vocab.map((token, id) => [token, id])),
      merges: [],
    },
  };
}

export function tokenizerConfigJson(vocab: string[], modelMaxLength: number): object {
  return {
    add_bos_token: true,
    add_eos_token: false,
    added_tokens_decoder: Object.fromEntries(
      SPECIAL_TOKENS.map((token, id) => [
        String(id),
        { content: token, lstrip: false, normalized: false, rstrip: false, single_word: false, special: true },
      ]),
    ),
    bos_token: vocab[BOS_ID],
    eos_token: vocab[EOS_ID],
    pad_token: vocab[PAD_ID],
    unk_token: vocab[UNK_ID],
    chat_template: CHAT_TEMPLATE,
    // Decoding must give back exactly the sampled characters.
    clean_up_tokenization_spaces: false,
    model_max_length: modelMaxLength,
    tokenizer_class: 'PreTrainedTokenizerFast',
  };
}
