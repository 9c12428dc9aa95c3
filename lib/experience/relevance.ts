/**
 * How close an experience is to a task, for showing each prompt only the experiences that fit it
 * (the retrieval of in-context examples by similarity, as kNN example selection and ExpeL do).
 * Lexical and dependency-free: the words and adjacent word pairs a task shares with an entry,
 * each weighted by how rare it is in the library (inverse document frequency), so a shared case
 * name ("wrap 4") outweighs template words every entry has, and a shared phrase outweighs the
 * same words apart.
 */

/** Lower-cased runs of letters or digits, and each adjacent pair of them. */
export function relevanceTerms(text: string): Set<string> {
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  const terms = new Set(words);
  for (let i = 1; i < words.length; i++) terms.add(`${words[i - 1]} ${words[i]}`);
  return terms;
}

/**
 * The relevance of each text to `query`: the sum over the query's terms found in the text of
 * ln(1 + n / df), n the number of texts and df how many contain the term. 0 when nothing is shared.
 */
export function relevanceScores(query: string, texts: readonly string[]): number[] {
  const wanted = relevanceTerms(query);
  const termsOf = texts.map(relevanceTerms);
  const df = new Map<string, number>();
  for (const terms of termsOf) for (const term of terms) if (wanted.has(term)) df.set(term, (df.get(term) ?? 0) + 1);
  return termsOf.map((terms) => {
    let score = 0;
    for (const term of terms) {
      const count = df.get(term);
      if (count !== undefined) score += Math.log(1 + texts.length / count);
    }
    return score;
  });
}
