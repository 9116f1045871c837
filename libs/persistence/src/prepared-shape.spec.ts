import { MAX_NAMED_SHAPES, preparedShape } from './database';

describe('preparedShape', () => {
  it('names one text once, the same name every time, and different texts differently', () => {
    const first = preparedShape('SELECT 1 WHERE $1 = 1');
    expect(first).toEqual({ name: expect.stringMatching(/^shape_[0-9a-f]{24}$/), text: 'SELECT 1 WHERE $1 = 1' });
    expect(preparedShape('SELECT 1 WHERE $1 = 1')).toBe(first);
    expect(preparedShape('SELECT 2 WHERE $1 = 1')).not.toEqual(expect.objectContaining({ name: (first as { name: string }).name }));
  });

  it('runs shapes beyond the bound unnamed, so ever new filters cannot grow every connection', () => {
    for (let i = 0; i < MAX_NAMED_SHAPES + 100; i++) preparedShape(`SELECT ${i} AS bound_test`);
    expect(preparedShape('SELECT 100000 AS bound_test')).toBe('SELECT 100000 AS bound_test');
    // Shapes named before the bound keep their names.
    expect(preparedShape('SELECT 1 WHERE $1 = 1')).toEqual({ name: expect.stringMatching(/^shape_/), text: 'SELECT 1 WHERE $1 = 1' });
  });
});
