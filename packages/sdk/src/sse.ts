/**
 * A Server-Sent Events reader over a fetch body (the WHATWG event stream
 * format): events end at a blank line, `data:` lines join with "\n", `id:`
 * sets the last event id (which later events keep), lines starting with `:`
 * are comments (keep-alives). CR, LF and CRLF all end a line, also when a
 * chunk boundary falls between CR and LF.
 */

export interface SseMessage {
  /** The `event:` name; `message` when none was given. */
  event: string;
  data: string;
  /** The last event id seen so far on this stream, if any. */
  lastEventId: string | undefined;
}

export async function* readSse(body: AsyncIterable<Uint8Array>): AsyncGenerator<SseMessage> {
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];
  let event = '';
  let lastEventId: string | undefined;
  let skipLf = false;

  const line = (text: string): SseMessage | null => {
    if (text === '') {
      const message = data.length > 0 ? { event: event || 'message', data: data.join('\n'), lastEventId } : null;
      data = [];
      event = '';
      return message;
    }
    if (text.startsWith(':')) return null;
    const colon = text.indexOf(':');
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
    else if (field === 'id' && !value.includes('\0')) lastEventId = value;
    return null;
  };

  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    if (skipLf && buffer.startsWith('\n')) buffer = buffer.slice(1);
    skipLf = false;
    let start = 0;
    for (let i = 0; i < buffer.length; i++) {
      const ch = buffer[i];
      if (ch !== '\n' && ch !== '\r') continue;
      const message = line(buffer.slice(start, i));
      if (ch === '\r') {
        if (i + 1 < buffer.length) {
          if (buffer[i + 1] === '\n') i++;
        } else {
          skipLf = true; // the LF of this CRLF may open the next chunk
        }
      }
      start = i + 1;
      if (message) yield message;
    }
    buffer = buffer.slice(start);
  }
  // A stream that ends mid-event drops that event, as EventSource does.
}
