/** A list answer (SPEC §8): newest first, `next_cursor` the id of the page's last item. */
export interface Page<Item> {
  data: Item[];
  has_more: boolean;
  next_cursor: string | null;
}

/**
 * What a list method returns: awaiting it gives the first page; `for await` over it gives every item of every
 * page, asking for the next page with the previous one's `next_cursor` only when the loop gets there.
 */
export class PageRequest<P extends Page<Item>, Item> implements PromiseLike<P>, AsyncIterable<Item> {
  private first: Promise<P> | undefined;

  constructor(private readonly fetchPage: (cursor: string | undefined) => Promise<P>) {}

  then<A = P, B = never>(
    onFulfilled?: ((page: P) => A | PromiseLike<A>) | null,
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.firstPage().then(onFulfilled, onRejected);
  }

  catch<B = never>(onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<P | B> {
    return this.firstPage().catch(onRejected);
  }

  private firstPage(): Promise<P> {
    this.first ??= this.fetchPage(undefined);
    return this.first;
  }

  /** Every page in turn, the first included. */
  async *pages(): AsyncGenerator<P> {
    let page = await this.firstPage();
    yield page;
    while (page.has_more && page.next_cursor !== null) {
      page = await this.fetchPage(page.next_cursor);
      yield page;
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Item> {
    for await (const page of this.pages()) yield* page.data;
  }
}
