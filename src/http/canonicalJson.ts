/**
 * JSON with object keys sorted, so equal data hashes equally whatever order the client wrote. Iterative
 * (an explicit stack of pending values and punctuation), so no input can exhaust the call stack; the
 * output is byte for byte the recursive definition's, which stored idempotency hashes depend on.
 */
export function canonicalJson(root: unknown): string {
  const out: string[] = [];
  const work: Array<{ text: string } | { value: unknown }> = [{ value: root }];
  while (work.length > 0) {
    const item = work.pop()!;
    if ('text' in item) {
      out.push(item.text);
      continue;
    }
    const { value } = item;
    if (Array.isArray(value)) {
      work.push({ text: ']' });
      for (let i = value.length - 1; i >= 0; i--) {
        work.push({ value: value[i] });
        if (i > 0) work.push({ text: ',' });
      }
      work.push({ text: '[' });
    } else if (value !== null && typeof value === 'object') {
      const keys = Object.keys(value).sort();
      work.push({ text: '}' });
      for (let i = keys.length - 1; i >= 0; i--) {
        work.push({ value: (value as Record<string, unknown>)[keys[i]!] });
        work.push({ text: `${i > 0 ? ',' : ''}${JSON.stringify(keys[i])}:` });
      }
      work.push({ text: '{' });
    } else {
      out.push(JSON.stringify(value) ?? 'null');
    }
  }
  return out.join('');
}
